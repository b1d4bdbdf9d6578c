"""The build context holds exactly the project, as it is now, and nothing secret.

``out/.envkit/`` (the project, wheels, requirement files, certificates) holds what the run's plan
lists, each file in the manifest with its sha256 (a file envkit did not write is the user's: kept,
named and left out of the image); a copy is judged by its content, never by
size and time; only regular files are copied; well-known credential files stay out unless the
profile names them in ``image.ship_secrets``; a CA file ships its certificate blocks only and one
holding a private key is refused; requirement files and the lock must be the project's own.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
from pathlib import Path

import pytest

from envkit import output
from envkit.commands.generate import run as generate
from envkit.project import SECRETS
from tests.conftest import run_envkit

# Slow tier (--run-slow; the README's command runs it): real generate runs over a project tree, its links, FIFOs and sockets.
pytestmark = pytest.mark.slow

HEAD = "envkit: 1\nname: ctx\nimage:\n  base: debian:bookworm\n"
COPY = HEAD + "  copy_project: true\n"
CERT = b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2Fw\n-----END CERTIFICATE-----\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _gen(proj: Path, text: str | None = None) -> tuple[int, str, str]:
    if text is not None:
        (proj / "envkit.yaml").write_text(text)
    res = run_envkit("generate", "envkit.yaml", "-o", "out", "--target", "dockerfile", cwd=proj, timeout=60)
    return res.returncode, res.stdout, res.stderr


def _gen_here(proj: Path) -> str:
    """generate in this process (so a test can patch envkit.output); its stdout."""
    out, err = io.StringIO(), io.StringIO()
    assert generate(proj / "envkit.yaml", proj / "out", ("dockerfile",), force=False, strict=False,
                    out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def _context(proj: Path, folder: str = ".envkit") -> set[str]:
    root = proj / "out"
    return {p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if not p.is_dir()}


def _manifest(proj: Path) -> dict[str, str]:
    return json.loads((proj / "out" / ".envkit-manifest.json").read_text())["files"]


def _same_size_and_mtime_replace(path: Path, text: str, *, in_place: bool = False) -> None:
    """Change ``path``'s content keeping its size and mtime: as ``rsync -a`` or ``tar x`` (a new inode)
    or ``cp -p`` onto it (the same inode) leave it."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    if in_place:
        path.write_text(text)
    else:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def test_a_file_deleted_from_the_project_is_pruned_and_every_copy_is_in_the_manifest(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n", "pkg/old.py": "x = 1\n", "pkg/new.py": "y = 2\n"})
    assert _gen(tmp_path, COPY)[0] == 0
    assert {".envkit/project/pkg/old.py", ".envkit/project/train.py"} <= _context(tmp_path)
    (tmp_path / "pkg" / "old.py").unlink()
    code, out, err = _gen(tmp_path)
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/project/envkit.yaml", ".envkit/project/pkg/new.py",
                                  ".envkit/project/train.py"}
    assert "removed" in out and "old.py" in out
    manifest = _manifest(tmp_path)
    for rel in _context(tmp_path):
        assert manifest[rel] == hashlib.sha256((tmp_path / "out" / rel).read_bytes()).hexdigest(), rel
    assert not [p for p in manifest if p.endswith("old.py")]
    # Copying the project is turned off: its copies go too.
    assert _gen(tmp_path, HEAD)[0] == 0
    assert not (tmp_path / "out" / ".envkit" / "project").exists()


def test_a_wheel_removed_from_the_wheelhouse_is_pruned_and_one_put_there_by_hand_is_kept(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("a-1-py3-none-any.whl", "b-1-py3-none-any.whl"):
        (wheels / name).write_bytes(b"PK" + name.encode())
    text = HEAD + "  torch: {version: '2.13.0', find_links: [wheels]}\n"
    assert _gen(tmp_path, text)[0] == 0
    assert _context(tmp_path, ".envkit/wheels") == {".envkit/wheels/00/a-1-py3-none-any.whl",
                                                    ".envkit/wheels/00/b-1-py3-none-any.whl"}
    (wheels / "a-1-py3-none-any.whl").unlink()
    (tmp_path / "out" / ".envkit" / "wheels" / "00" / "planted.whl").write_bytes(b"not from the wheelhouse")
    code, out, err = _gen(tmp_path)
    assert code == 0, err
    # The wheel envkit copied goes with its source; the one envkit did not write is the user's: kept,
    # named, and out of the image.
    assert _context(tmp_path, ".envkit/wheels") == {".envkit/wheels/00/b-1-py3-none-any.whl",
                                                    ".envkit/wheels/00/planted.whl"}
    assert "a-1-py3-none-any.whl" in out and "planted.whl" in err and "did not write" in err
    assert ".envkit/wheels/00/planted.whl" in (tmp_path / "out" / ".dockerignore").read_text().splitlines()
    assert ".envkit/wheels/00/b-1-py3-none-any.whl" in _manifest(tmp_path)
    assert ".envkit/wheels/00/planted.whl" not in _manifest(tmp_path)


def test_a_requirement_file_dropped_from_the_profile_leaves_the_context_even_when_edited(tmp_path):
    _write(tmp_path, {"a.txt": "six\n", "b.txt": "idna\n"})
    assert _gen(tmp_path, HEAD + "  requirements: [a.txt, b.txt]\n")[0] == 0
    (tmp_path / "out" / ".envkit" / "requirements" / "01-b.txt").write_text("idna\nevil\n")
    code, out, err = _gen(tmp_path, HEAD + "  requirements: [a.txt]\n")
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/requirements/00-a.txt"}
    assert "removed" in out and "01-b.txt" in out


@pytest.mark.parametrize("how", ["new inode (rsync -a, tar x)", "in place (cp -p) into a copied file"])
def test_an_edit_keeping_size_and_mtime_is_copied(tmp_path, monkeypatch, how):
    in_place = how.startswith("in place")
    if in_place:  # another file system: the context holds copies, not links, so an in-place edit is not shared
        def no_link(src, dst):
            raise OSError(18, "Invalid cross-device link")
        monkeypatch.setattr(output.os, "link", no_link)
    _write(tmp_path, {"train.py": "lr = 0.1\n"})
    (tmp_path / "envkit.yaml").write_text(COPY)
    _gen_here(tmp_path)
    copy = tmp_path / "out" / ".envkit" / "project" / "train.py"
    assert copy.read_text() == "lr = 0.1\n"
    _same_size_and_mtime_replace(tmp_path / "train.py", "lr = 0.9\n", in_place=in_place)
    out = _gen_here(tmp_path)
    assert copy.read_text() == "lr = 0.9\n"
    assert "train.py" in out
    assert _manifest(tmp_path)[".envkit/project/train.py"] == hashlib.sha256(b"lr = 0.9\n").hexdigest()


def test_an_unchanged_hard_linked_copy_is_not_read_again(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "big-1-py3-none-any.whl").write_bytes(b"PK" * 1000)
    (tmp_path / "envkit.yaml").write_text(HEAD + "  torch: {version: '2.13.0', find_links: [wheels]}\n")
    _gen_here(tmp_path)
    read: list[str] = []
    real = output.file_sha256
    monkeypatch.setattr(output, "file_sha256", lambda p: read.append(str(p)) or real(p))
    assert "unchanged" in _gen_here(tmp_path)
    assert read == []  # same inode, same signature: the recorded sha256 stands
    # Any write to the wheel moves its ctime, so the next run hashes it again.
    with open(wheels / "big-1-py3-none-any.whl", "r+b") as f:
        f.write(b"PK")
    _gen_here(tmp_path)
    assert any(p.endswith("big-1-py3-none-any.whl") for p in read)


def test_fifos_and_sockets_in_the_project_are_skipped_and_named_without_hanging(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n"})
    os.mkfifo(tmp_path / "events.fifo")
    (tmp_path / "run").mkdir()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "run" / "agent.sock"))
    s.close()
    code, _, err = _gen(tmp_path, COPY)
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/project/envkit.yaml", ".envkit/project/train.py"}
    lines = [line for line in err.splitlines() if "image.copy_project: skipped" in line]
    assert len(lines) == 2, err
    assert "'events.fifo': it is a FIFO" in lines[0] and "'run/agent.sock': it is a socket" in lines[1]


CREDENTIALS = [".aws/credentials", ".aws/config", "deploy/.docker/config.json", ".kube/config", ".pgpass",
               "service-account.json", "keys/prod-service-account-key.json",
               "gcloud/application_default_credentials.json", ".config/gcloud/credentials.db",
               "infra/terraform.tfstate", "infra/terraform.tfstate.backup", "putty/server.ppk",
               ".ssh/id_rsa", ".ssh/known_hosts", ".env", "certs/tls.key", ".netrc"]
# The ML tools' token files, each where its tool writes it in a home folder checked in as a project.
ML_CREDENTIALS = [".kaggle/kaggle.json", ".huggingface/token", ".cache/huggingface/token", ".databrickscfg",
                  ".s3cfg", ".boto", ".vault-token", ".azure/accessTokens.json", ".config/gh/hosts.yml",
                  "home/.kaggle/kaggle.json"]


def test_credential_files_never_ship_by_default(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n", **{rel: "secret\n" for rel in CREDENTIALS}})
    # The user's .dockerignore adds to the list; an exception in it brings no secret back.
    (tmp_path / ".dockerignore").write_text("*.log\n!.aws/credentials\n!.pgpass\n")
    (tmp_path / "debug.log").write_text("l\n")
    code, _, err = _gen(tmp_path, COPY)
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/project/envkit.yaml", ".envkit/project/train.py"}


def test_the_ml_tools_credential_files_never_ship_by_default(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n", ".cache/huggingface/hub/model.txt": "weights\n",
                      **{rel: "token\n" for rel in ML_CREDENTIALS}})
    code, _, err = _gen(tmp_path, COPY)
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/project/envkit.yaml", ".envkit/project/train.py",
                                  ".envkit/project/.cache/huggingface/hub/model.txt"}


def test_only_image_ship_secrets_takes_a_pattern_out_of_the_list(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n", ".aws/config": "[profile x]\n", ".aws/credentials": "k\n"})
    code, _, err = _gen(tmp_path, COPY + "  ship_secrets: [.aws/config]\n")
    assert code == 0, err
    assert ".envkit/project/.aws/config" in _context(tmp_path)
    assert ".envkit/project/.aws/credentials" not in _context(tmp_path)
    code, _, err = _gen(tmp_path, COPY + "  ship_secrets: [.aws/configs]\n")
    assert code == 2
    assert "envkit.yaml:6:" in err and "image.ship_secrets[0]" in err and "did you mean '.aws/config'?" in err
    schema = json.loads(run_envkit("schema").stdout)
    assert schema["$defs"]["Image"]["properties"]["ship_secrets"]["items"]["enum"] == list(SECRETS)


def test_the_documented_credential_list_is_the_built_in_one():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "robustness.md").read_text()
    missing = [p for p in SECRETS if f"`{p}`" not in doc]
    assert not missing, f"docs/robustness.md does not list {missing}"


def test_a_ca_file_ships_its_certificate_blocks_only(tmp_path):
    (tmp_path / "ca.pem").write_bytes(b"Bag Attributes\n    friendlyName: corp\n" + CERT + b"trailing notes\n"
                                      + CERT.replace(b"Fw", b"Fx"))
    code, _, err = _gen(tmp_path, HEAD + "  ca_certificates: [ca.pem]\n")
    assert code == 0, err
    shipped = (tmp_path / "out" / ".envkit" / "certs" / "00-ca.crt").read_bytes()
    assert shipped == CERT + CERT.replace(b"Fw", b"Fx")


@pytest.mark.parametrize("kind", ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"])
def test_a_ca_file_holding_a_private_key_is_refused_at_load(tmp_path, kind):
    key = f"-----BEGIN {kind}-----\nMIIEvQ\n-----END {kind}-----\n".encode()
    (tmp_path / "bundle.pem").write_bytes(CERT + key)
    code, _, err = _gen(tmp_path, HEAD + "  ca_certificates:\n    - bundle.pem\n")
    assert code == 2, err
    assert "envkit.yaml:6:7: image.ca_certificates[0]: 'bundle.pem' holds a private key" in err
    assert f"-----BEGIN {kind}----- on its line 4" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["/etc/passwd", "../secret.txt", "a link out"])
def test_a_requirement_file_outside_the_project_is_exit_2_at_its_line(tmp_path, case):
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "secret.txt").write_text("token\n")
    rel = case
    if case == "a link out":
        (proj / "reqs.txt").symlink_to(tmp_path / "secret.txt")
        rel = "reqs.txt"
    code, _, err = _gen(proj, HEAD + f"  requirements:\n    - {rel}\n")
    assert code == 2, err
    assert f"envkit.yaml:6:7: image.requirements[0]: {rel!r} lies outside the profile's folder" in err
    assert not (proj / "out").exists()


def test_a_requirement_file_elsewhere_in_the_git_work_tree_is_taken_and_only_there(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("six==1.17.0\n")
    proj = tmp_path / "services" / "train"
    proj.mkdir(parents=True)
    code, _, err = _gen(proj, HEAD + "  requirements: [../../requirements.txt]\n")
    assert code == 0, err
    assert (proj / "out" / ".envkit" / "requirements" / "00-requirements.txt").read_text() == "six==1.17.0\n"
    # Without the work tree, the same file lies outside the profile's folder.
    (tmp_path / ".git").rmdir()
    code, _, err = _gen(proj)
    assert code == 2 and "image.requirements[0]: '../../requirements.txt' lies outside the profile's folder" in err


def test_a_lock_linked_from_outside_the_project_is_refused(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "other.lock.txt").write_text("six==1.17.0 --hash=sha256:" + "0" * 64 + "\n")
    (proj / "envkit.lock.txt").symlink_to(tmp_path / "other.lock.txt")
    code, _, err = _gen(proj, HEAD + "  torch: {version: '2.13.0'}\n")
    assert code == 2, err
    assert "envkit.lock.txt: lies outside the profile's folder" in err and "symbolic link" in err


def test_a_dockerignore_saved_with_a_bom_keeps_its_first_pattern(tmp_path):
    # PowerShell 5.1's `Set-Content -Encoding UTF8` and old Notepad start the file with EF BB BF.
    _write(tmp_path, {"train.py": "print(1)\n", "secret.txt": "api-key\n", "debug.log": "l\n"})
    (tmp_path / ".dockerignore").write_bytes(b"\xef\xbb\xbfsecret.txt\r\n*.log\r\n")
    code, _, err = _gen(tmp_path, COPY)
    assert code == 0, err
    assert _context(tmp_path) == {".envkit/project/envkit.yaml", ".envkit/project/train.py"}


def _gen_into_project(proj: Path, *flags: str) -> tuple[int, str, str]:
    res = run_envkit("generate", "envkit.yaml", "-o", ".", "--target", "dockerfile", *flags, cwd=proj, timeout=60)
    return res.returncode, res.stdout, res.stderr


def _copied(proj: Path) -> set[str]:
    root = proj / ".envkit" / "project"
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir()}


def test_the_users_dockerignore_still_applies_after_generate_force_replaced_it(tmp_path):
    _write(tmp_path, {"train.py": "print(1)\n", "api-key.txt": "sk-live\n", "data/big.bin": "x\n"})
    (tmp_path / ".dockerignore").write_text("api-key.txt\ndata/\n")
    (tmp_path / "envkit.yaml").write_text(COPY)
    code, _, err = _gen_into_project(tmp_path)
    assert code == 1 and "not overwriting" in err and ".dockerignore" in err
    code, _, err = _gen_into_project(tmp_path, "--force")
    assert code == 0, err
    (backup,) = [p.name for p in tmp_path.glob(".dockerignore.envkit-bak-*")]
    assert "Generated by envkit" in (tmp_path / ".dockerignore").read_text()
    assert _copied(tmp_path) == {"envkit.yaml", "train.py"}
    # The next runs read the user's patterns from the kept copy, and say so, naming it.
    for _ in range(2):
        code, _, err = _gen_into_project(tmp_path)
        assert code == 0, err
        assert _copied(tmp_path) == {"envkit.yaml", "train.py"}
        assert "image.copy_project: the .dockerignore beside the profile is envkit's own" in err
        assert f"read from {backup!r}" in err
    # An edit to the kept copy is what applies.
    (tmp_path / backup).write_text("data/\n")
    code, _, err = _gen_into_project(tmp_path)
    assert code == 0, err
    assert _copied(tmp_path) == {"envkit.yaml", "train.py", "api-key.txt"}


def test_a_profile_or_requirements_file_holding_credentials_is_left_out_of_the_project_copy(tmp_path):
    (tmp_path / "envkit.yaml").write_text(
        "envkit: 1\nname: t\nimage:\n  base: 'python:3.11-slim'\n  copy_project: true\n"
        "  requirements: [requirements.txt]\n  proxy: {http: 'http://u:S3CRETpw@proxy.corp:3128'}\n")
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://deploy:TOKEN1@pypi.example.com/simple\nsix\n")
    (tmp_path / "plain.txt").write_text("six\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    # Not listed in the profile, but a requirements file all the same.
    (tmp_path / "requirements-dev.txt").write_text("-i https://ci:TOKEN2@pypi.example.com/simple\npytest\n")
    res = run_envkit("generate", "-o", "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    shipped = sorted(p.name for p in (tmp_path / "out" / ".envkit" / "project").rglob("*") if p.is_file())
    assert shipped == ["plain.txt", "train.py"]
    assert "left requirements-dev.txt out of the image: the requirements file requirements-dev.txt holds" in res.stderr
    (tmp_path / "requirements-dev.txt").unlink()
    assert "left envkit.yaml out of the image: the profile holds a URL with a user or password" in res.stderr
    assert "left requirements.txt out of the image: the requirements file requirements.txt" in res.stderr
    assert "S3CRETpw" not in res.stderr and "TOKEN1" not in res.stderr
    # Without credentials both are copied as before.
    (tmp_path / "requirements.txt").write_text("six\n")
    (tmp_path / "envkit.yaml").write_text((tmp_path / "envkit.yaml").read_text().replace("u:S3CRETpw@", ""))
    res = run_envkit("generate", "-o", "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    shipped = sorted(p.name for p in (tmp_path / "out" / ".envkit" / "project").rglob("*") if p.is_file())
    assert shipped == ["envkit.yaml", "plain.txt", "requirements.txt", "train.py"]


def test_every_symbolic_link_left_out_of_the_project_is_named_and_nothing_outside_ships(tmp_path):
    proj = tmp_path / "proj"
    _write(proj, {"train.py": "print(1)\n", "conf/base.yaml": "lr: 1\n"})
    (proj / "latest.yaml").symlink_to("conf/base.yaml")  # inside the project
    (proj / "conf-link").symlink_to("conf")  # a folder, inside
    (proj / "passwd").symlink_to("/etc/passwd")  # out of the project
    (proj / "gone.txt").symlink_to("missing.txt")  # dangling
    (proj / "evil\x1b[2Jname").symlink_to("train.py")  # a name holding an escape
    code, _, err = _gen(proj, COPY)
    assert code == 0, err
    assert _context(proj) == {".envkit/project/envkit.yaml", ".envkit/project/train.py",
                              ".envkit/project/conf/base.yaml"}
    lines = [line for line in err.splitlines() if "image.copy_project: left out" in line]
    assert len(lines) == 5, err
    by_name = {line.split("'")[1]: line for line in lines}
    assert "a symbolic link to 'conf/base.yaml', inside the project" in by_name["latest.yaml"]
    assert "copy the file, or mount it" in by_name["latest.yaml"]
    assert "a symbolic link to 'conf', inside the project" in by_name["conf-link"]
    assert "pointing out of the project is never followed" in by_name["passwd"]
    assert "/etc/passwd" not in err and "root:" not in err
    assert "a symbolic link to nothing" in by_name["gone.txt"]
    assert "evil\\x1b[2Jname" in by_name and "\x1b" not in err
    shipped = "".join(p.read_text(errors="replace") for p in (proj / "out" / ".envkit").rglob("*") if p.is_file())
    assert "root:" not in shipped
