"""The Dockerfile as data: stages of typed steps, decided here from the image plan; the template lays them out.

As hpccm's building blocks and repo2docker's buildpacks do, every choice (the layout's stages, which
steps, their order, their comments and the texts a failing step prints) is made in Python;
templates/Dockerfile.j2 only loops over :class:`Stage` and its steps and spells each kind:

- :class:`Instruction`: one line, ``KEYWORD word word`` (ARG, SHELL, COPY, USER, WORKDIR, ENTRYPOINT, CMD);
- :class:`Settings`: ``ENV``/``LABEL`` with one ``key=value`` a line (values quoted as Dockerfile
  strings when ``quoted``);
- :class:`Run`: ``RUN`` joining its :class:`Command` s with `` \\`` + newline + `` && ``; a command with a
  ``failure`` text prints it to stderr and stops the build when it fails.

Each step carries its ``comments`` (lines without the ``# ``; ``hadolint ignore=`` lines among them) and
``gap``, a blank line before them. A stage is ``FROM base [AS name]`` with its own comments and gap.

Example:
    >>> run = Run((Command("apt-get update"), Command("pip install x", failure="envkit: x failed.")))
    >>> [c.text for c in run.commands], run.alone, run.form
    (['apt-get update', 'pip install x'], False, 'run')
    >>> Stage("system", "ubuntu:24.04", (run,)).name
    'system'
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from envkit.plan.paths import (
    BUILD_DIR, CHECK_FILE, CHECK_PATH, CONSTRAINTS_IN_RUN, CONTEXT_DIR, DELTA_DIR, DELTA_SCRIPT,
    ENTRYPOINT_FILE, ENTRYPOINT_PATH, EXPECT_FILE, HARNESS_DIR, HARNESS_FILE, LOCK_FILE_NAME, REMOVED_LIST,
    SEED_IN_RUN, UV_IN_RUN, VENV, WHEELS_IN_IMAGE,
)
from envkit.plan.image import ImageSpec, ImageUser
from envkit.targets import dockerfile_messages as msg

# uv is installed with pip (same proxy and CA settings) where it is used: in the build stage, or in /tmp
# for the one RUN of the direct layout; pinned, so a rebuild installs the same resolver.
UV_VERSION = "0.13.9"
# With uv, the venv is created --without-pip and seeded by uv from the wheels `python -m venv` would
# install: the same files, compiled by uv's workers instead of by ensurepip's own pip run (2.7 s
# here), and that pip, run from its wheel, installs uv. With argv[1] "pip" this prints that pip
# wheel's path; with "requirements", the packages pinned to those wheels' versions, one per line
# (uv installs them from the wheels' folder with --find-links, so they are recorded as from an index:
# installed from the files' paths, `pip freeze` would print `pip @ file:///usr/share/...`); or
# nothing, and then the Dockerfile runs ensurepip itself. It chooses as ensurepip does (CPython
# 3.10-3.13 ensurepip/__init__.py): the packages are pip, and setuptools before Python 3.12
# (gh-95299); they come from the distribution's folder, sysconfig's WHEEL_PKG_DIR (configure
# --with-wheel-pkg-dir: Debian, Ubuntu and Fedora use /usr/share/python-wheels), if every one is
# there, else from the wheels bundled in ensurepip/_bundled (python.org builds, python:* images);
# of several files for one package, the last in sorted order.
SEED_WHEEL_PY = (
    'import importlib.util, os, sys, sysconfig; n = ["pip"] + (["setuptools"] if sys.version_info < (3, 12) else []); '
    'f = lambda d: {x: os.path.join(d, w) for w in (sorted(os.listdir(d)) if d and os.path.isdir(d) else []) '
    'for x in n if w.startswith(x + "-") and w.endswith(".whl")}; e = importlib.util.find_spec("ensurepip"); '
    'p = f(sysconfig.get_config_var("WHEEL_PKG_DIR")); '
    'p = p if len(p) == len(n) else f(e and e.origin and os.path.join(os.path.dirname(e.origin), "_bundled")); '
    'p = p if len(p) == len(n) else {}; '
    'print(p.get("pip", "") if sys.argv[1] == "pip" else "\\n".join('
    'x + "==" + os.path.basename(w)[len(x) + 1:].partition("-")[0] for x, w in p.items()))'
)
UV_ENV = ("UV_COMPILE_BYTECODE=1", "UV_NO_CACHE=1", "UV_PYTHON_DOWNLOADS=never")
DELTA_IN_IMAGE = f"{BUILD_DIR}/{DELTA_SCRIPT}"


@dataclass(frozen=True)
class Command:
    """One shell command of a RUN (it may hold its own continuation lines); ``failure``: the text it
    prints to stderr, the build then stopping, when it fails."""

    text: str
    failure: str | None = None


@dataclass(frozen=True)
class Instruction:
    """``keyword word word ...`` on one line."""

    keyword: str
    words: tuple[str, ...]
    comments: tuple[str, ...] = ()
    gap: bool = False
    form = "line"


@dataclass(frozen=True)
class Settings:
    """``ENV`` or ``LABEL``, one ``key=value`` a line."""

    keyword: str
    pairs: tuple[tuple[str, str], ...]
    quoted: bool = False
    comments: tuple[str, ...] = ()
    gap: bool = False
    form = "pairs"


@dataclass(frozen=True)
class Run:
    """``RUN`` of one chain of commands."""

    commands: tuple[Command, ...]
    comments: tuple[str, ...] = ()
    gap: bool = False
    form = "run"

    @property
    def alone(self) -> bool:
        """One command: its failure text follows it without the braces a chain needs."""
        return len(self.commands) == 1


Step = Instruction | Settings | Run


@dataclass(frozen=True)
class Stage:
    """``FROM base [AS name]`` and its steps."""

    name: str | None
    base: str
    steps: tuple[Step, ...]
    comments: tuple[str, ...] = ()
    gap: bool = False


@dataclass(frozen=True)
class TorchInstall:
    spec: str
    index_url: str | None
    find_links: tuple[str, ...]  # wheelhouse folders in the image
    extra: tuple[str, ...]  # installed with torch (numpy) unless the profile's packages name them


@dataclass(frozen=True)
class Inputs:
    """What the steps are decided from: the image plan's and the profile's image settings, resolved."""

    header: str
    spec: ImageSpec  # the plan's base, installer, packages, user, workdir, env and labels
    layout_direct: bool
    packages_stage: bool
    proxy: bool
    certs: bool
    torch: TorchInstall | None
    lock: bool
    lock_index_url: str | None
    requirements: tuple[tuple[str, bool], ...]  # (file name in the context's requirements/, pinned with hashes)
    entrypoint: bool
    project: bool

    @property
    def install(self) -> str:
        return "uv pip install" if self.spec.installer == "uv" else "pip install"

    @property
    def seed_venv(self) -> bool:
        # The direct layout's venv is seeded by uv where uv installs in that RUN anyway (torch or the lock).
        return self.layout_direct and self.spec.installer == "uv" and bool(self.torch or self.lock)


class _Steps:
    """A stage's steps as they are appended; ``gap()`` puts a blank line before the next one."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._gap = False

    def gap(self) -> None:
        self._gap = True

    def add(self, cls, *args, **kw) -> None:
        self.steps.append(cls(*args, gap=self._gap, **kw))
        self._gap = False


def _q(value: str) -> str:
    return shlex.quote(str(value))


def _runtime_pth() -> Command:
    # `from envkit_runtime import loader_kwargs` in training scripts: the .pth puts the harness zipapp on the path.
    return Command(f"echo {HARNESS_DIR}/{HARNESS_FILE} > \"$({VENV}/bin/python -c 'import sysconfig; "
                   "print(sysconfig.get_path(\"purelib\"))')/envkit_runtime.pth\"")


def _seed_uv(target: str) -> list[Command]:
    """Install uv into ``target`` with the pip wheel `python -m venv` would have used (else ensurepip's pip)."""
    py = f"{VENV}/bin/python"
    return [Command(f"find_wheel={_q(SEED_WHEEL_PY)}"),
            Command(f'pip_whl="$({py} -c "$find_wheel" pip)"'),
            Command(f'if [ -n "$pip_whl" ]; then {py} "$pip_whl/pip" install --quiet --target {target} uv=={UV_VERSION}; \\\n'
                    f"    else {py} -m ensurepip --default-pip && {VENV}/bin/pip install --quiet --target {target} "
                    f"uv=={UV_VERSION}; fi")]


def _seed() -> Command:
    """Seed the venv's pip (and setuptools) from the same wheels, through uv."""
    return Command(f'{{ [ -z "$pip_whl" ] || {{ {VENV}/bin/python -c "$find_wheel" requirements > {SEED_IN_RUN} \\\n'
                   f'      && uv pip install --no-index --find-links "${{pip_whl%/*}}" -r {SEED_IN_RUN} && rm {SEED_IN_RUN}; }}; }}')


def _uv_in_run() -> list[Command]:
    return [Command(f"pip install --quiet --target {UV_IN_RUN} uv=={UV_VERSION}"),
            Command(f'export PATH="{UV_IN_RUN}/bin:$PATH" {" ".join(UV_ENV)}')]


def _venv_env(*extra_path: str) -> tuple[tuple[str, str], ...]:
    return (("PATH", ":".join((f"{VENV}/bin", *extra_path, "$PATH"))), ("VIRTUAL_ENV", VENV))


def _pin_torch(pin_file: str) -> Command:
    return Command(f"python -c \"import importlib.metadata as m; print('torch==' + m.version('torch'))\" > {pin_file}")


def stages(v: Inputs) -> list[Stage]:
    """The Dockerfile's stages for ``v``: one in the direct layout; else system, build, [packages,] final.

    >>> from dataclasses import replace
    >>> from envkit.planner import build_plan
    >>> from envkit.profile import load_profile
    >>> spec = replace(build_plan(load_profile(None)).image.spec, base_ref="debian:bookworm", installer="pip",
    ...                apt_packages=("python3",), ca_env=(), user=ImageUser("dev", 1000, 1000, False), workdir="/w",
    ...                pip_packages=("pillow",), env=(), labels=(), install_project=False)
    >>> v = Inputs(header="#", spec=spec, layout_direct=False, packages_stage=True, proxy=False, certs=False,
    ...            torch=TorchInstall("torch==2.5.1+cpu", None, ("/tmp/envkit-wheels/00",), ("numpy",)),
    ...            lock=False, lock_index_url=None, requirements=(), entrypoint=False, project=False)
    >>> [(s.name, s.base) for s in stages(v)]
    [('system', 'debian:bookworm'), ('build', 'system'), ('packages', 'build'), (None, 'system')]
    >>> [c.text for c in stages(v)[2].steps[1].commands]
    ['sh /opt/envkit-build/envkit-delta.sh snapshot /opt/venv /opt/envkit-build/files-before']
    >>> stages(v)[2].steps[2].commands[0].failure.startswith("envkit: installing image.pip_packages failed")
    True
    """
    system = _Steps()
    _system_steps(v, system)
    first_comments = _layout_comments(v) + (
        "Run-time settings (shm, ipc, cpuset, memory, ulimits, GPUs) are not image settings:",
        "they are in run.sh, compose.yaml and .devcontainer/devcontainer.json.")
    if v.layout_direct:
        system.gap()
        _direct_steps(v, system)
        _tail_steps(v, system)
        return [Stage(None, v.spec.base_ref, tuple(system.steps), first_comments)]
    out = [Stage("system", v.spec.base_ref, tuple(system.steps), first_comments)]
    build = _Steps()
    _build_steps(v, build)
    packages = _Steps() if v.packages_stage else build  # without a packages stage, its steps end the build stage
    _packages_steps(v, packages)
    out.append(Stage("build", "system", tuple(build.steps), (f"The environment is installed in this stage; only {VENV} leaves it.",),
                     gap=True))
    if v.packages_stage:
        out.append(Stage("packages", "build", tuple(packages.steps), (
            "The profile's packages in a stage of their own over torch's: a change to them starts here, and the",
            "final stage takes torch's environment from \"build\" (unchanged, cached) and from this stage only what",
            "these installs added, changed or removed, not the whole environment again."), gap=True))
    final = _Steps()
    _final_steps(v, final)
    _tail_steps(v, final)
    out.append(Stage(None, "system", tuple(final.steps), gap=True))
    return out


def _layout_comments(v: Inputs) -> tuple[str, ...]:
    if v.layout_direct:
        what: tuple[str, ...]
        if v.lock:
            what = ("environment installed in place, exactly as envkit.lock.txt pins it.",)
        elif v.torch:
            what = ("environment installed in place, torch in a layer of its own and what goes over it (numpy, the profile's",
                    "packages) in the next.")
        else:
            what = ("environment installed in place, the profile's packages in a layer of their own.",)
        uv = "uv lives in /tmp only for the RUN that uses it" if v.spec.installer == "uv" else "pip keeps no cache"
        return ("One stage, one chain of layers (classic-builder syntax): base, CA, apt packages, user, then the virtual",
                *what, f"Nothing a later layer would have to delete: no wheelhouse in the build context, and {uv}.")
    if v.packages_stage:
        return ("Four stages (classic-builder syntax): \"system\" (base, CA, apt packages, user) is shared; \"build\"",
                "installs torch into the virtual environment and \"packages\" the profile's packages over it; the final",
                f"stage copies only {VENV} from build and what packages added, so wheelhouses, installer caches and",
                f"{v.spec.installer} never ship, and a package change does not copy torch again.")
    return ("Three stages (classic-builder syntax): \"system\" (base, CA, apt packages, user) is shared; \"build\"",
            f"installs the virtual environment; the final stage copies only {VENV} from it, so wheelhouses,",
            f"installer caches and {v.spec.installer} never ship.")


def _system_steps(v: Inputs, s: _Steps) -> None:
    s.gap()
    s.add(Instruction, "ARG", ("DEBIAN_FRONTEND=noninteractive",), comments=(
        "Proxy: compose.yaml, devcontainer.json and `envkit build` pass http_proxy, https_proxy and",
        "no_proxy as build arguments (with plain docker build: --build-arg http_proxy=...). Docker",
        "predefines these ARGs and keeps their values out of the image's history.") if v.proxy else ())
    s.add(Instruction, "SHELL", ('["/bin/sh", "-eu", "-c"]',))
    s.gap()
    if v.certs:
        s.add(Instruction, "COPY", (f"{CONTEXT_DIR}/certs/", "/usr/local/share/ca-certificates/envkit/"),
              comments=("Corporate CA certificates first, so every download below trusts the inspecting proxy.",))
    if v.spec.apt_packages:
        cmds = [Command("apt-get update"),
                Command("apt-get install -y --no-install-recommends " + " ".join(v.spec.apt_packages))]
        cmds += [Command("update-ca-certificates")] if v.certs else []
        cmds.append(Command("rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin"))
        s.add(Run, tuple(cmds), comments=(
            "Unpinned on purpose: the template serves any Debian/Ubuntu base; the base tag (or image.digest) pins the release.",
            "The lists and apt's binary caches go in the same RUN (a base without Docker's docker-clean keeps ~75 MB of them).",
            "hadolint ignore=DL3008"))
    elif v.certs:
        s.add(Run, (Command("update-ca-certificates"),))
    # pip ships its own CA list (certifi) and ignores the system store unless told; set before the first download.
    s.add(Settings, "ENV", (("PIP_NO_CACHE_DIR", "1"), ("PIP_DISABLE_PIP_VERSION_CHECK", "1")) + v.spec.ca_env)
    s.gap()
    u, wd = v.spec.user, _q(v.spec.workdir)
    if u.is_root:
        s.add(Run, (Command(f"mkdir -p {wd}"),),
              comments=("The profile asks for root. Files written to bind mounts will be owned by root on the host.",))
        return
    s.add(Run, (
        Command(f"if ! getent group {u.gid} >/dev/null; then groupadd --gid {u.gid} {u.name}; fi"),
        Command(f'existing="$(getent passwd {u.uid} || true)" && existing="${{existing%%:*}}"'),
        Command('if [ -n "$existing" ]; then userdel --remove "$existing" 2>/dev/null || userdel "$existing"; fi'),
        Command(f"useradd --uid {u.uid} --gid {u.gid} --create-home --shell /bin/bash {u.name}"),
        Command(f"mkdir -p {wd}"),
        Command(f"chown {u.uid}:{u.gid} {wd}")), comments=(
        "A non-root user whose uid/gid match the host's, so bind-mounted files keep their owner.",
        "An image user already holding that uid" + (" (ubuntu:24.04 ships \"ubuntu\" as 1000)"
                                                     if v.spec.base_ref.startswith("ubuntu:24.04") and u.uid == 1000 else "")
        + " is replaced.",
        "(DL4006, pipefail: dash, /bin/sh on Debian bases, may lack it; an empty result of the getent pipe is the normal \"no such user\")",
        "hadolint ignore=DL4006"))


def _direct_steps(v: Inputs, s: _Steps) -> None:
    """One chain of layers: the venv with torch (or the lock) in one RUN, the profile's packages in the next."""
    s.add(Settings, "ENV", _venv_env())
    lock_path = f"{HARNESS_DIR}/{LOCK_FILE_NAME}"
    if v.lock:
        s.add(Instruction, "COPY", (f"{CONTEXT_DIR}/{LOCK_FILE_NAME}", lock_path), comments=(
            "envkit.lock.txt (`envkit lock`): exactly these packages, each checked against its recorded hash.",))
    comments = ["A virtual environment: distribution Pythons refuse system-wide pip installs (PEP 668). A .pth in it puts the",
                "harness zipapp (copied below) on the path, for `from envkit_runtime import loader_kwargs` in training scripts."]
    if v.seed_venv:
        comments += ["Created without pip: uv installs the pip (and setuptools before Python 3.12) that `python -m venv` would,",
                     "from the same wheels; the pip run from that wheel installs uv, pinned (same proxy and CA settings), into",
                     f"{UV_IN_RUN}, removed in the same RUN."]
    if v.torch and not v.lock:
        comments += ["torch first, alone in a layer that a change to the profile's packages leaves cached.",
                     "hadolint ignore=DL3013"]
    cmds = [Command(f"python3 -m venv {'--without-pip ' if v.seed_venv else ''}{VENV}"), _runtime_pth()]
    if v.seed_venv:
        cmds += _seed_uv(UV_IN_RUN)
        cmds += [Command(f'export PATH="{UV_IN_RUN}/bin:$PATH" {" ".join(UV_ENV)}'), _seed()]
    if v.lock:
        index = f" --extra-index-url {_q(v.lock_index_url)}" if v.lock_index_url else ""
        cmds.append(Command(f"{v.install} --require-hashes --no-deps{index} -r {lock_path}", msg.lock_failed(LOCK_FILE_NAME)))
    elif v.torch:
        index = f" --index-url {_q(v.torch.index_url)}" if v.torch.index_url else ""
        cmds.append(Command(f"{v.install}{index} {_q(v.torch.spec)}"))
    if v.seed_venv:
        cmds.append(Command(f"rm -rf {UV_IN_RUN}"))
    s.add(Run, tuple(cmds), comments=tuple(comments))
    extra = v.torch.extra if v.torch else ()
    if v.lock or not (v.requirements or v.spec.pip_packages or extra):
        s.gap()
        return
    s.gap()
    if v.requirements:
        s.add(Instruction, "COPY", (f"{CONTEXT_DIR}/requirements/", f"{HARNESS_DIR}/requirements/"))
    comments = ["The profile's own packages in a layer over torch's: a change to them rebuilds from here, torch's layer stays."]
    if v.torch:
        comments.append("Every install is constrained to the torch above, so a package that pins another torch fails the build "
                        "instead of replacing it.")
    comments += [f"image.requirements {name[3:]}: the team's file as it is"
                 f"{', every package checked against its hash' if hashes else ''}." for name, hashes in v.requirements]
    if v.spec.pip_packages:
        comments.append("image.pip_packages as written: their pins (or none) are the profile's choice.")
    if extra:
        comments.append("numpy unpinned (torch warns on every import without it): the newest that fits this torch.")
    comments.append("hadolint ignore=DL3013")
    pin = CONSTRAINTS_IN_RUN if v.torch else None
    cmds = _uv_in_run() if v.spec.installer == "uv" else []
    cmds += [_pin_torch(pin), Command(f'echo "{msg.constrained_note(pin, later=False)}"')] if pin else [
        Command(f'echo "{msg.PACKAGES_NOTE}"')]
    constrain = f" --constraint {pin}" if pin else ""
    for name, hashes in v.requirements:
        cmds.append(Command(f"{v.install}{constrain}{' --require-hashes' if hashes else ''} -r {HARNESS_DIR}/requirements/{name}",
                            msg.requirements_failed(name[3:], hashes, f"$(cat {pin})" if pin else None)))
    if v.spec.pip_packages or extra:
        words = "".join(f" {_q(p)}" for p in v.spec.pip_packages) + "".join(f" {x}" for x in extra)
        cmds.append(Command(f"{v.install}{constrain}{words}",
                            msg.packages_failed("image.pip_packages" if v.spec.pip_packages else "numpy", pin)))
    cmds += [Command(f"rm -rf {UV_IN_RUN}")] if v.spec.installer == "uv" else []
    cmds += [Command(f"rm {pin}")] if pin else []
    s.add(Run, tuple(cmds), comments=tuple(comments))
    s.gap()


def _build_steps(v: Inputs, s: _Steps) -> None:
    """The build stage: the venv, then the lock or torch, which is where the staged layouts differ from each other."""
    venv_comment = "A virtual environment: distribution Pythons refuse system-wide pip installs (PEP 668)."
    if v.spec.installer == "uv":
        s.add(Settings, "ENV", _venv_env(f"{BUILD_DIR}/uv/bin") + tuple(tuple(e.split("=")) for e in UV_ENV), comments=(
            venv_comment, "uv, pinned, installed with pip through the same proxy and CA settings; it stays in this stage."))
        s.add(Run, (Command(f"python3 -m venv --without-pip {VENV}"), *_seed_uv(f"{BUILD_DIR}/uv"), _seed()), comments=(
            "The venv's pip (and setuptools before Python 3.12) come from the wheels `python -m venv` installs,",
            "through uv; the pip run from that wheel installs uv."))
    else:
        s.add(Run, (Command(f"python3 -m venv {VENV}"), Command(f"mkdir -p {BUILD_DIR}")), comments=(venv_comment,))
        s.add(Settings, "ENV", _venv_env())
    find_links = "".join(f" --find-links {d}" for d in (v.torch.find_links if v.torch else ()))
    wheels = (Instruction, "COPY", (f"{CONTEXT_DIR}/wheels/", f"{WHEELS_IN_IMAGE}/"))
    if v.lock:
        s.gap()
        if v.torch and v.torch.find_links:
            s.add(*wheels)
        lock_path = f"{BUILD_DIR}/{LOCK_FILE_NAME}"
        s.add(Instruction, "COPY", (f"{CONTEXT_DIR}/{LOCK_FILE_NAME}", lock_path), comments=(
            "envkit.lock.txt (`envkit lock`): exactly these packages, each checked against its recorded hash.",))
        index = f" --extra-index-url {_q(v.lock_index_url)}" if v.lock_index_url else ""
        s.add(Run, (Command(f"{v.install} --require-hashes --no-deps{find_links}{index} -r {lock_path}",
                            msg.lock_failed(LOCK_FILE_NAME)),))
    elif v.torch:
        s.gap()
        if v.torch.find_links:
            s.add(*wheels)
        t = v.torch
        index = f" --index-url {_q(t.index_url)}" if t.index_url else ""
        pin = f"{BUILD_DIR}/constraints.txt"
        s.add(Run, (Command(f"{v.install}{find_links}{index} {_q(t.spec)}" + "".join(f" {x}" for x in t.extra)),
                    _pin_torch(pin), Command(f'echo "{msg.constrained_note(pin, later=True)}"')), comments=(
            "torch first; its installed version (with the variant's label) then constrains every later install,",
            "so a package that pins another torch fails the build instead of replacing this one.",
            "numpy unpinned: the newest that fits this torch (the profile's pip_packages may pin it).",
            "hadolint ignore=DL3013"))


def _packages_steps(v: Inputs, s: _Steps) -> None:
    """The profile's requirement files and pip_packages over torch's environment (a lock has installed them)."""
    if v.lock:
        return
    if v.packages_stage:
        s.add(Instruction, "COPY", (DELTA_SCRIPT, f"{BUILD_DIR}/"), comments=(
            f"{DELTA_SCRIPT}: the delta below, taken by a script of this stage's own (the final stage copies only its result).",))
        s.add(Run, (Command(f"sh {DELTA_IN_IMAGE} snapshot {VENV} {BUILD_DIR}/files-before"),), comments=(
            "Torch's environment as it is: every path with its type, size and modification time (whole seconds:",
            "what an image layer keeps), the list the delta below is taken against."))
    pin = f"{BUILD_DIR}/constraints.txt" if v.torch else None
    constrain = f" --constraint {pin}" if pin else ""
    find_links = "".join(f" --find-links {d}" for d in (v.torch.find_links if v.torch else ()))
    for i, (name, hashes) in enumerate(v.requirements):
        if i == 0:
            s.gap()
            s.add(Instruction, "COPY", (f"{CONTEXT_DIR}/requirements/", f"{BUILD_DIR}/requirements/"))
        s.add(Run, (Command(f"{v.install}{constrain}{' --require-hashes' if hashes else ''}{find_links} -r {BUILD_DIR}/requirements/{name}",
                            msg.requirements_failed(name[3:], hashes, "it" if pin else None)),), comments=(
            f"image.requirements: the team's file as it is{', every package checked against its hash' if hashes else ''}"
            f"{', constrained to the torch above' if pin else ''}.",))
    if v.spec.pip_packages:
        s.gap()
        words = "".join(f" {_q(p)}" for p in v.spec.pip_packages)
        failure = msg.packages_failed("image.pip_packages", pin) if pin else None
        s.add(Run, (Command(f"{v.install}{constrain}{find_links}{words}", failure),), comments=(
            "The profile's pip_packages as written: their pins (or none) are the profile's choice.", "hadolint ignore=DL3013"))
    if v.packages_stage:
        s.gap()
        s.add(Run, (Command(f"sh {DELTA_IN_IMAGE} delta {VENV} {BUILD_DIR}/files-before {DELTA_DIR} {REMOVED_LIST}"),), comments=(
            "The delta against that list (rsync's quick check: a path is new or changed when its type, mode, size or",
            "modification time differs; times survive image layers, which ctimes do not), plus every file that the",
            "RECORD of a package installed here names (an installer that kept a wheel's file times could leave a",
            f"changed file with its old size and time): its files as a tree under {DELTA_DIR}, and the paths the",
            "installs removed (an upgraded package's old files) for the final stage to delete."))


def _final_steps(v: Inputs, s: _Steps) -> None:
    s.add(Instruction, "COPY", ("--from=build", VENV, VENV))
    s.add(Settings, "ENV", _venv_env())
    s.gap()
    pth = "`from envkit_runtime import loader_kwargs` in training scripts: a .pth puts the zipapp (copied below) on the path."
    if v.packages_stage:
        s.add(Instruction, "COPY", ("--from=packages", f"{DELTA_DIR}/", f"{VENV}/"), comments=(
            "What the profile's packages added over torch's environment (stage \"packages\"), then what they removed.",))
        s.add(Run, (Command(f"xargs -r -d '\\n' rm -rf -- < {VENV}/{REMOVED_LIST}"), Command(f"rm {VENV}/{REMOVED_LIST}"),
                    _runtime_pth()), comments=(pth,))
    else:
        s.add(Run, (_runtime_pth(),), comments=(pth,))
    s.gap()


def _tail_steps(v: Inputs, s: _Steps) -> None:
    """The harness, the profile's env, the labels, the project's code and the user: the same in every layout."""
    s.add(Instruction, "COPY", (HARNESS_FILE, EXPECT_FILE, f"{HARNESS_DIR}/"), comments=(
        f"envkit's harness and this image's expectation; `{CHECK_FILE}` runs the one with the other.",))
    if v.entrypoint:
        # One COPY for both scripts (one step fewer to rebuild after every profile edit): one folder.
        s.add(Instruction, "COPY", (CHECK_FILE, ENTRYPOINT_FILE, f"{os.path.dirname(CHECK_PATH)}/"), comments=(
            f"{ENTRYPOINT_FILE}: started as root with ENVKIT_REMAP_USER=1 (run.sh and compose.yaml do), it gives "
            f"{v.spec.user.name} the uid/gid of the",
            "project folder's owner and drops to it, so one image serves every member of a team; as any other user it "
            "changes nothing."))
    else:
        s.add(Instruction, "COPY", (CHECK_FILE, CHECK_PATH))
    if v.spec.env:
        s.gap()
        s.add(Settings, "ENV", v.spec.env, quoted=True)
    s.gap()
    s.add(Settings, "LABEL", v.spec.labels, quoted=True, comments=(
        "Labels last: they carry the profile's hash, and an instruction that changes with every",
        "profile edit would invalidate every cached layer after it."))
    u = v.spec.user
    if v.project:
        s.gap()
        chown = () if u.is_root else (f"--chown={u.uid}:{u.gid}",)
        s.add(Instruction, "COPY", (*chown, f"{CONTEXT_DIR}/project/", f"{v.spec.workdir}/"), comments=(
            "The project's code (image.copy_project), last: an edit to it rebuilds only these layers.",))
        if v.spec.install_project:
            s.add(Run, (Command(f"cp -r {v.spec.workdir} /tmp/envkit-project"), Command("pip install --no-deps /tmp/envkit-project"),
                        Command("rm -rf /tmp/envkit-project")), comments=(
                "image.install_project: the project as a package, without dependencies (the environment above has them).",))
    s.gap()
    s.add(Instruction, "USER", (u.name,), comments=(
        "The name resolves inside the image (created above with the profile's uid); tools show it, not a number.",
        "hadolint ignore=DL3066"))
    s.add(Instruction, "WORKDIR", (v.spec.workdir,))
    if v.entrypoint:
        s.add(Instruction, "ENTRYPOINT", (f'["{ENTRYPOINT_PATH}"]',))
    s.add(Instruction, "CMD", ('["/bin/bash"]',))


__all__ = ["Command", "ImageUser", "Inputs", "Instruction", "Run", "SEED_WHEEL_PY", "Settings", "Stage", "TorchInstall",
           "UV_VERSION", "stages"]
