"""The image plan: the Dockerfile's layout, torch's requirement, and every file the image is built from.

Each requirements file, the lock, each certificate is read (bounded) once, when the profile is
loaded (:class:`envkit.profile.LoadedProfile` keeps the bytes); this module decides from those
bytes and lists the wheels and project files that are copied by link. The Dockerfile target, the
build context, ``envkit lock`` and the warnings all read this one object.

Layouts (:class:`Layout`):

- ``direct``: one chain of layers where the venv is installed in place. A stage copying the venv
  into the final image writes and commits it twice (about 15 s of a ~50 s cold build for the CPU
  wheel here, far more for CUDA's several GB), so this is the layout whenever nothing needs a stage;
- ``staged``: stages ``system``, ``build`` and the final one. A wheelhouse in the build context
  needs it, since its ``COPY`` layer ships even if a later step deletes it; so do credentials in an
  index URL, a requirements file or the lock (in the direct layout the install commands are in the
  image's history and the files in the image);
- ``staged-packages``: ``staged`` plus a ``packages`` stage over torch's when the profile's own
  packages sit over torch, so a change to them copies only what they add (a lock installs
  everything in one step, and without torch there is nothing big to keep).

Example:
    >>> from envkit.profile import load_profile
    >>> ip = image_plan(load_profile(None), Path("out"))
    >>> ip.layout, ip.torch_requirement, ip.torch_extras
    (<Layout.DIRECT: 'direct'>, 'torch==2.5.1', ('numpy',))
"""

from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from envkit import __version__
from envkit.errors import EnvkitError
from envkit.findings import Finding
from envkit.pem import certificate_blocks
from envkit.plan.paths import CA_BUNDLE, CONTEXT_DIR, DELTA_SCRIPT, LOCK_FILE_NAME, MANIFEST
from envkit.plan.network import network_plan
from envkit.plan.registry import output_names
from envkit.profile import LoadedProfile
from envkit.profile.proxy import proxy_build_args
from envkit.profile.sections import User
from envkit.project import select_project
from envkit.render import templates_dir
from envkit.requirements import decode, has_credentials, has_hashes, names_numpy, requirements_of
from envkit.safeio import REQUIREMENTS_MAX, kind_of, read_bounded
from envkit.termtext import neutralise

TORCH_INDEX = "https://download.pytorch.org/whl/{variant}"
BASE_APT = ("ca-certificates", "python3", "python3-venv")
CA_ENV_KEYS = ("CURL_CA_BUNDLE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")


class Layout(enum.Enum):
    DIRECT = "direct"
    STAGED = "staged"
    STAGED_PACKAGES = "staged-packages"


@dataclass(frozen=True)
class InputFile:
    """A file the image is built from, read once: where the profile names it, where it goes in the
    build context, its bytes, and whether it pins with hashes (requirement files and the lock)."""

    source: str
    context_path: str
    data: bytes
    hashes: bool = False

    @property
    def text(self) -> str:
        return decode(self.data)

    @property
    def name(self) -> str:
        return os.path.basename(self.context_path)


@dataclass(frozen=True)
class LinkedFile:
    """A file copied into the build context by link (a wheel, project code): never read by envkit."""

    context_path: str
    source: Path
    mode: int = 0o644


@dataclass(frozen=True)
class ImageUser:
    """The image's user: created with the host's uid/gid unless root."""

    name: str
    uid: int
    gid: int
    is_root: bool

    @classmethod
    def of(cls, user: User) -> ImageUser:
        """The image's user as ``image.user`` asks for it."""
        return cls(user.name, user.uid, user.gid, user.is_root)

    @property
    def remapped(self) -> bool:
        """True when the image carries envkit-entrypoint: its user is not root, and a container started as root
        gets that user remapped to the uid/gid of the project folder's owner, then runs as it. One image then
        serves every member of a team whatever their host uid (the image bakes image.user.uid). The one home
        of this rule: the Dockerfile (the entrypoint) and the run settings (start as root) read it.

        >>> ImageUser("dev", 1000, 1000, False).remapped, ImageUser("root", 0, 0, True).remapped
        (True, False)
        """
        return not self.is_root


@dataclass(frozen=True)
class ImageSpec:
    """What the image is, decided from ``image:``: the base and what goes on it, its user, labels and tag.

    ``proxy_build_args``: Docker's predefined proxy ARGs, passed as --build-arg; ``delta_script``: the
    packages stage's script (templates/envkit-delta.sh), read here, None without that stage."""

    name: str
    base: str
    digest: str | None
    base_ref: str
    installer: str
    apt_packages: tuple[str, ...]
    ca_env: tuple[tuple[str, str], ...]
    user: ImageUser
    workdir: str
    proxy_build_args: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...]
    labels: tuple[tuple[str, str], ...]
    pip_packages: tuple[str, ...]
    install_project: bool
    copies_project: bool
    tag: str
    tag_is_default: bool
    delta_script: bytes | None


def is_python_base(base: str) -> bool:
    """True for the official ``python`` images (``python:3.11-slim``, ``docker.io/library/python:3.12``),
    which bring their own Python: installing Debian's python3 on top would be a second one.

    >>> is_python_base("docker.io/library/python:3.12"), is_python_base("team/python-tools:1")
    (True, False)
    """
    name = base.split(":", 1)[0].rsplit("/", 1)[-1]
    return name == "python" and base.split(":", 1)[0] in ("python", "library/python", "docker.io/library/python")


def apt_packages(image, network: tuple[str, ...] = ()) -> list[str]:
    """Debian packages the system stage installs: Python and CA tools unless the base has them, and the
    network plan's (the verbs libraries on an RDMA fabric)."""
    base = () if is_python_base(image.base) else BASE_APT
    return sorted(set(base) | set(image.system_packages) | set(network))


def image_spec(loaded: LoadedProfile, certs: bool, packages_stage: bool) -> ImageSpec:
    """The :class:`ImageSpec` of ``loaded`` (``certs``: the image installs CA certificates)."""
    p = loaded.profile
    image = p.image
    labels = {
        "org.opencontainers.image.title": p.name,
        "org.opencontainers.image.base.name": image.base,
        "io.envkit.profile.sha256": loaded.sha256,
        "io.envkit.version": __version__,
    }
    if image.digest:
        labels["org.opencontainers.image.base.digest"] = image.digest
    # pip ships its own CA list (certifi) and ignores the system store unless told;
    # requests and OpenSSL-based tools likewise. Set before the first pip download.
    ca_env = tuple((k, CA_BUNDLE) for k in CA_ENV_KEYS if certs and k not in image.env)
    return ImageSpec(
        name=p.name, base=image.base, digest=image.digest,
        base_ref=f"{image.base}@{image.digest}" if image.digest else image.base,
        installer=image.installer, apt_packages=tuple(apt_packages(image, network_plan(p).apt_packages)), ca_env=ca_env,
        user=ImageUser.of(image.user), workdir=image.workdir,
        proxy_build_args=tuple(proxy_build_args(p.image.proxy)), env=tuple(sorted(image.env.items())),
        labels=tuple(sorted(labels.items())), pip_packages=tuple(image.pip_packages),
        install_project=image.install_project, copies_project=p.copies_project, tag=p.image_tag,
        tag_is_default=p.image_is_default,
        delta_script=(templates_dir() / DELTA_SCRIPT).read_bytes() if packages_stage else None,
    )


@dataclass(frozen=True)
class ImagePlan:
    layout: Layout
    torch_requirement: str | None  # None: the profile installs no torch
    torch_index_url: str | None
    # Installed with torch: numpy (torch warns on every import without it) unless something the
    # profile installs names numpy, whose own pin then decides.
    torch_extras: tuple[str, ...]
    # What `envkit lock` resolves with torch: numpy unless image.pip_packages name it.
    lock_extras: tuple[str, ...]
    requirements: tuple[InputFile, ...]
    lock: InputFile | None
    certs: tuple[InputFile, ...]
    wheel_dirs: tuple[tuple[str, str], ...]  # (as the profile names it, folder in the build context)
    wheels: tuple[LinkedFile, ...]
    project: tuple[LinkedFile, ...]
    credentials: bool
    spec: ImageSpec  # the base, user, labels and tag
    # What is left out for not being a regular file (a FIFO, socket or device): (key, path, what it is).
    skipped: tuple[tuple[str, str, str], ...] = ()
    # Warnings about the project copy (image.copy_project).
    notes: tuple[Finding, ...] = ()

    @property
    def direct(self) -> bool:
        return self.layout is Layout.DIRECT

    @property
    def packages_stage(self) -> bool:
        return self.layout is Layout.STAGED_PACKAGES

    @property
    def requirement_lines(self) -> list[str]:
        """The requirements of all the profile's ``requirements`` files."""
        return [line for f in self.requirements for line in requirements_of(f.text)]


def torch_requirement(torch) -> tuple[str, str | None]:
    """(requirement, index URL) for the profile's torch.

    >>> from envkit.profile.sections import Torch
    >>> torch_requirement(Torch(version="2.5.1", variant="cu124"))
    ('torch==2.5.1', 'https://download.pytorch.org/whl/cu124')
    >>> torch_requirement(Torch(version="2.5.1", find_links=("wheels",)))
    ('torch==2.5.1+cpu', None)
    """
    if torch.find_links:
        # A wheelhouse holds local-version wheels (2.5.1+cu124); pin the label so pip cannot
        # prefer an index build, and let the default (or given) index serve the dependencies.
        return f"torch=={torch.version}+{torch.variant}", torch.index_url
    return f"torch=={torch.version}", torch.index_url or TORCH_INDEX.format(variant=torch.variant)


def image_plan(loaded: LoadedProfile, out_dir: Path) -> ImagePlan:
    """The image plan of ``loaded`` rendered into ``out_dir`` (which the project copy leaves out)."""
    image = loaded.profile.image
    torch = image.torch
    requirements = tuple(
        InputFile(rel, f"{CONTEXT_DIR}/requirements/{i:02d}-{os.path.basename(rel)}", data,
                  has_hashes(decode(data)))
        for i, (rel, data) in enumerate((rel, loaded.input_bytes(rel)) for rel in image.requirements))
    lock = (InputFile(LOCK_FILE_NAME, f"{CONTEXT_DIR}/{LOCK_FILE_NAME}", loaded.lock, True)
            if loaded.lock is not None else None)
    # update-ca-certificates wants *.crt; the image gets the certificate blocks only (envkit.pem).
    certs = tuple(InputFile(rel, f"{CONTEXT_DIR}/certs/{i:02d}-{os.path.splitext(os.path.basename(rel))[0]}.crt",
                            certificate_blocks(loaded.input_bytes(rel)))
                  for i, rel in enumerate(image.ca_certificates))
    wheel_dirs = tuple((rel, f"{CONTEXT_DIR}/wheels/{i:02d}") for i, rel in enumerate(torch.find_links if torch else ()))
    wheels, skipped = _wheels(loaded, wheel_dirs)
    texts = [torch.index_url or ""] if torch else []
    texts += [f.text for f in requirements] + ([lock.text] if lock else [])
    credentials = has_credentials(texts)
    if wheel_dirs or credentials:
        staged_packages = bool(torch) and lock is None and bool(image.pip_packages or requirements)
        layout = Layout.STAGED_PACKAGES if staged_packages else Layout.STAGED
    else:
        layout = Layout.DIRECT
    spec, index = torch_requirement(torch) if torch else (None, None)
    lock_extras = () if names_numpy(image.pip_packages) else ("numpy",)
    req_lines = [line for f in requirements for line in requirements_of(f.text)]
    # numpy goes in with torch only when nothing the profile installs names it: else the profile's pin would
    # replace it in a later layer and torch's layer would keep a dead copy.
    torch_extras = () if names_numpy(req_lines) else lock_extras
    project, project_skipped, notes = _project(loaded, out_dir)
    return ImagePlan(layout=layout, torch_requirement=spec, torch_index_url=index,
                     torch_extras=torch_extras if torch else (), lock_extras=lock_extras if torch else (),
                     requirements=requirements, lock=lock, certs=certs, wheel_dirs=wheel_dirs, wheels=wheels,
                     project=project, credentials=credentials, skipped=skipped + project_skipped,
                     notes=notes, spec=image_spec(loaded, bool(certs), layout is Layout.STAGED_PACKAGES))


def _wheels(loaded: LoadedProfile, wheel_dirs: tuple[tuple[str, str], ...]
            ) -> tuple[tuple[LinkedFile, ...], tuple[tuple[str, str, str], ...]]:
    """The wheelhouses' ``*.whl`` files that are regular files (a link to one counts), and the others."""
    wheels: list[LinkedFile] = []
    skipped: list[tuple[str, str, str]] = []
    for rel, folder in wheel_dirs:
        for w in sorted(loaded.resolve(rel).glob("*.whl")):
            try:
                mode = w.stat().st_mode  # stat, never open: a FIFO would block
            except OSError:
                continue  # a dangling link, or gone meanwhile
            if stat.S_ISREG(mode):
                wheels.append(LinkedFile(f"{folder}/{w.name}", w))
            else:
                skipped.append(("image.torch.find_links", f"{rel.rstrip('/')}/{w.name}", kind_of(mode)))
    return tuple(wheels), tuple(skipped)


def _project(loaded: LoadedProfile, out_dir: Path
             ) -> tuple[tuple[LinkedFile, ...], tuple[tuple[str, str, str], ...], tuple[Finding, ...]]:
    """The profile folder's files copied into the image (image.copy_project), the special files left out,
    and the warnings about the copy."""
    p = loaded.profile
    if not p.copies_project:
        return (), (), ()

    torch = p.image.torch
    wheelhouses = tuple(loaded.resolve(d) for d in (torch.find_links if torch else ()))
    # What any target writes stays out: generating into the profile's own folder (-o .) twice must not
    # copy the first run's outputs into the image.
    chosen = select_project(loaded.base_dir, exclude_dirs=wheelhouses + (out_dir,), ship=p.image.ship_secrets,
                            outputs=output_names(), manifest=MANIFEST)
    held = _credentialed_inputs(loaded, chosen.files)
    out, notes = [], [Finding("image.copy_project", note) for note in chosen.notes]
    for rel in chosen.files:
        src = loaded.base_dir / rel
        why = held.get(src.resolve())
        if why is not None:
            notes.append(Finding("image.copy_project", f"left {neutralise(rel)} out of the image: {why} holds a URL with a "
                         "user or password in it (USER:TOKEN@HOST), and a copied file ships in its layer for "
                         "good; keep the credential in a file the build does not copy (a secret, the "
                         "environment), or mount the file at run time"))
            continue
        out.append(LinkedFile(f"{CONTEXT_DIR}/project/{rel}", src, src.lstat().st_mode & 0o777))
    return tuple(out), tuple(("image.copy_project", rel, kind) for rel, kind in chosen.skipped), tuple(notes)


# Project files read as requirements files although the profile does not list them (a team's
# requirements-dev.txt, constraints.txt): pip reads index URLs, tokens included, from any of them.
_REQUIREMENTS_NAMES = ("*requirements*.txt", "*requirements*.in", "constraints*.txt")


def _credentialed_inputs(loaded: LoadedProfile, files: tuple[str, ...] | list[str] = ()) -> dict[Path, str]:
    """The files envkit read at load that hold URL credentials (the profile itself: a proxy or index
    password; a requirements file: ``--extra-index-url https://deploy:TOKEN@...``), by resolved path,
    each with what it is. The project copy leaves them out: redacting would ship a file that no longer
    works, and the credential is the one thing that must not ship."""
    out: dict[Path, str] = {}
    # Every value the profile holds (proxy, index, run.env), as validated: no second read of the file.
    if has_credentials([loaded.profile.model_dump_json()]):
        out[Path(loaded.source).resolve()] = "the profile"
    for rel in loaded.profile.image.requirements:
        if has_credentials([loaded.input_bytes(rel).decode("utf-8", "replace")]):
            out[loaded.resolve(rel)] = f"the requirements file {neutralise(rel)} (image.requirements)"
    import fnmatch


    listed = {loaded.resolve(rel) for rel in loaded.profile.image.requirements}
    for rel in files:
        src = loaded.base_dir / rel
        if not any(fnmatch.fnmatch(src.name.lower(), pattern) for pattern in _REQUIREMENTS_NAMES):
            continue
        if src.resolve() in listed:  # read once, at load
            continue
        try:
            text = read_bounded(src, REQUIREMENTS_MAX, "a requirements file").decode("utf-8", "replace")
        except (EnvkitError, OSError):
            out[src.resolve()] = f"{neutralise(rel)} (a requirements file too large or unreadable to check)"
            continue
        if has_credentials([text]):
            out[src.resolve()] = f"the requirements file {neutralise(rel)}"
    return out
