"""Which of the profile's folder goes into the image (``image.copy_project``).

Everything under the profile's folder, except: what the user's own ``.dockerignore`` there excludes,
by Docker's own rules as docker-py applies them (``docker.utils.build.PatternMatcher``: Go's
``filepath.Match`` classes such as ``[0-9]`` and ``[!0-9]``, ``**``, ``!`` exceptions, a folder
pattern excluding everything under it; like docker-py, case-insensitive and with ``\\`` a literal
character, not an escape; envkit's own generated ``.dockerignore`` is not the user's),
envkit's outputs (the names the target registry says envkit writes, an output folder inside the project), the torch
wheelhouses (they belong to the build stage, not the code), version-control and cache folders, and
the well-known credential files of :data:`SECRETS` (``.env``, keys, ``.aws/credentials``,
``.kube/config``, ``terraform.tfstate``...) — which no ``!`` exception brings back: a secret in an
image is readable by everyone who can pull it. Only the profile's ``image.ship_secrets`` can take
a pattern out of that list. Only regular files are taken: a FIFO, socket or device is skipped and
named (:attr:`Selection.skipped`), never opened; a symbolic link (to a file or a folder, inside the
project, out of it or to nothing) is left out and named in a warning (:func:`link_note`).

Example:
    >>> ignored("src/.env", []), ignored("deploy/id_rsa.pub", []), ignored("train.py", ["*.py"])
    (True, True, True)
    >>> ignored("train.py", ["*.py", "!train.py"]), ignored("data/x.bin", ["data/"])
    (False, True)
    >>> ignored("token1.json", ["token[0-9].json"]), ignored("tokenA.json", ["token[!0-9].json"])
    (True, True)
    >>> secret_pattern("infra/.aws/credentials"), secret_pattern("home/.ssh/known_hosts"), secret_pattern("a.py")
    ('.aws/credentials', '.ssh/', None)
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from envkit.errors import ProfileError
from envkit.safeio import DOCKERIGNORE_MAX, kind_of, read_bounded

SKIP_DIRS = (".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
             ".ipynb_checkpoints", ".tox", ".nox")
# Well-known credential files, anywhere in the tree; a `!` line in .dockerignore cannot bring them back,
# only the profile's image.ship_secrets can. A pattern without "/" matches a file's name; one with "/"
# matches the path's last components (".aws/credentials" matches "infra/.aws/credentials"); one ending
# in "/" is a folder, left out whole. Documented in docs/robustness.md ("What never ships").
SECRETS = (".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.ppk", "id_rsa*", "id_dsa*", "id_ecdsa*",
           "id_ed25519*", ".netrc", ".pypirc", ".npmrc", ".pgpass", ".git-credentials", "*.kubeconfig", "kubeconfig",
           "credentials.json", "service-account*.json", "*service-account*.json", "terraform.tfstate*",
           ".aws/credentials", ".aws/config", ".docker/config.json", ".kube/config",
           "gcloud/application_default_credentials.json", ".config/gcloud/", ".ssh/",
           ".envkit-bak-*", "*.envkit-bak-*",
           # The ML and cloud tools' own token files, where each tool writes its login: the Kaggle API
           # (kaggle.json), huggingface_hub (HF_TOKEN_PATH, old and current place), the Databricks CLI,
           # s3cmd, boto, the Vault CLI, the Azure CLI before MSAL, and the GitHub CLI.
           ".kaggle/kaggle.json", ".huggingface/token", ".cache/huggingface/token", ".databrickscfg", ".s3cfg",
           ".boto", ".vault-token", ".azure/accessTokens.json", ".config/gh/hosts.yml")


# A pattern's literal head: what comes before its first wildcard or class.
_LITERAL_HEAD = re.compile(r"[^*?\[]*")


def _re2_syntax(regex: str) -> str:
    r"""``regex`` (docker-py's ``translate`` output, for Python's ``re``) as RE2 reads it the same.

    Two spellings differ: inside a class, ``[`` is a literal to Python but opens a POSIX class
    (``[:alpha:]``) to RE2, so it is escaped there; and translate's final ``$`` also matches before a
    final newline in Python, which :func:`compile_glob` does by matching the name without it.

    >>> print(_re2_syntax("^[[:alpha:]]x$"), _re2_syntax(r"^a\[b$"))
    [\[:alpha:]]x a\[b
    """
    out: list[str] = []
    i, n = 1, len(regex) - 1  # without translate's "^" and "$"
    in_class = False
    while i < n:
        c = regex[i]
        if c == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
            out.append(c)
            # A "^" first, then a "]" first, are part of the class, not its end.
            if regex[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if regex[i + 1:i + 2] == "]":
                out.append("]")
                i += 1
        elif in_class and c == "]":
            in_class = False
            out.append(c)
        elif in_class and c == "[":
            out.append("\\[")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """docker-py's ``fnmatch(name, pattern)`` (``pattern`` a cleaned .dockerignore pattern), compiled once
    and matched in time linear in the path, however many wildcards ``pattern`` holds.

    The expression is docker-py's own (``docker.utils.fnmatch.translate``), run by RE2 (google-re2),
    which never backtracks: Python's ``re``, which docker-py uses, took more than 50 s on
    ``**/a**/a**/a**/a**/a**/a**/a**/a**/x`` against a file 40 folders deep. Like docker-py, the
    pattern and the name are compared lowercased. A pattern Python's ``re`` refuses (``[b-a]``), and so
    docker-py, is exit 2.

    >>> m = compile_glob("**/a**/a**/a**/x")
    >>> m("a/a/a/x"), m("A/a/a/b/x"), m("a/x")
    (True, True, False)
    """
    import re2
    from docker.utils.fnmatch import translate

    lowered = pattern.lower()
    regex = translate(lowered)
    try:
        with warnings.catch_warnings():  # "[[:alpha:]]": Python warns of a future nested set
            warnings.simplefilter("ignore")
            re.compile(regex)  # what docker-py refuses is refused, with Python's words
        compiled = re2.compile(_re2_syntax(regex), _re2_options())
    except (re.error, re2.error) as e:
        raise ProfileError(f".dockerignore: pattern {pattern!r} is not valid: {e}") from None

    def match(name: str) -> bool:
        low = name.lower()
        return compiled.fullmatch(low) is not None or (low.endswith("\n") and compiled.fullmatch(low[:-1]) is not None)

    return match


def _re2_options():
    import re2

    options = re2.Options()
    options.max_mem = 64 << 20  # a long pattern's automaton; the default (8 MiB) refuses some Docker accepts
    return options


def _split_path(p: str) -> list[str]:
    """docker-py's ``split_path`` (``docker.utils.build``) on POSIX: the components, without empty or ``.`` ones."""
    return [part for part in p.split("/") if part and part != "."]


class DockerIgnore:
    """A .dockerignore's patterns, parsed by docker-py (``docker.utils.build.Pattern``), each compiled once
    and matched in bounded time (:func:`compile_glob`).

    :meth:`excluded` is docker-py's ``PatternMatcher.matches`` for one path; :meth:`descends` is its
    walk's rule for a folder (``PatternMatcher.walk``): an excluded folder is still entered when an
    ``!`` exception's pattern starts with the folder's path, and otherwise nothing under it is taken,
    whatever later exceptions say. Both together select what ``docker.utils.build.exclude_paths``
    selects. docker-py is imported here, only when a profile copies its project.
    """

    def __init__(self, rules: list[str]) -> None:
        from docker.utils.build import PatternMatcher

        # exclude_paths adds "!Dockerfile" (and PatternMatcher "!.dockerignore"): with the same
        # patterns the walk enters the same folders as docker-py's does.
        patterns = PatternMatcher([*rules, "!Dockerfile"]).patterns
        # (exclusion, matcher, depth, literal head) per pattern, in the file's order.
        self._patterns = [(p.exclusion, compile_glob(p.cleaned_pattern), len(p.dirs),
                           _LITERAL_HEAD.match(p.cleaned_pattern.lower()).group())  # type: ignore[union-attr]
                          for p in patterns]
        self._exceptions = tuple(p.cleaned_pattern for p in patterns if p.exclusion)

    def excluded(self, rel: str) -> bool:
        """True when the pattern list excludes ``rel`` (a /-separated path under the context).

        docker-py's rule: the last pattern matching ``rel``, or the folder above it as deep as the
        pattern's own, decides. For a plain ASCII path (no empty or ``.`` segment: what
        :func:`project_files` walks) the patterns are tried last first, and one whose literal head the
        path does not start with is skipped: neither the path nor a folder above it, a prefix of the
        path, could match it. Any other path takes docker-py's loop as it is written.
        """
        parts = rel.split("/")
        if not rel.isascii() or "" in parts or "." in parts:
            return self._matches(rel)
        low = rel.lower()
        above = len(parts) - 1
        for exclusion, match, depth, head in reversed(self._patterns):
            if not low.startswith(head):
                continue
            if match(rel) or (0 < depth <= above and match("/".join(parts[:depth]))):
                return not exclusion
        return False

    def _matches(self, filepath: str) -> bool:
        """``PatternMatcher.matches``, line for line, with the compiled patterns."""
        matched = False
        parent_path = os.path.dirname(filepath)
        parent_dirs = _split_path(parent_path)
        for exclusion, match, depth, _ in self._patterns:
            hit = match(filepath)
            if not hit and parent_path != "" and depth <= len(parent_dirs):
                hit = match("/".join(parent_dirs[:depth]))
            if hit:
                matched = not exclusion
        return matched

    def descends(self, rel_dir: str) -> bool:
        """True when a walk of the context enters folder ``rel_dir`` (docker-py's walk does the same)."""
        return not self.excluded(rel_dir) or any(p.startswith(rel_dir) for p in self._exceptions)


# Docker's reader drops a UTF-8 byte order mark before the first line (github.com/moby/patternmatcher,
# ignorefile/ignorefile.go, ReadAll: ``bytes.TrimPrefix(scannedBytes, utf8bom)`` on line 0), which
# PowerShell 5.1 and old Notepad write; kept, it would turn the first pattern into one that matches nothing.
UTF8_BOM = b"\xef\xbb\xbf"


def dockerignore_patterns(raw: bytes) -> list[str]:
    r"""A .dockerignore's patterns: a leading UTF-8 BOM dropped (:data:`UTF8_BOM`), then lines as
    docker-py reads them: stripped, blank ones and ``#`` comments dropped.

    >>> dockerignore_patterns(b"\xef\xbb\xbfsecret.txt\n# note\n\n *.log \n")
    ['secret.txt', '*.log']
    """
    text = raw.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
    return [line for line in (line.strip() for line in text.splitlines()) if line and not line.startswith("#")]


def generated_by_envkit(raw: bytes) -> bool:
    """True when a .dockerignore is envkit's own (its first line is the generated header)."""
    return b"Generated by envkit" in raw.removeprefix(UTF8_BOM).split(b"\n", 1)[0]


# `generate -o .` over a user's .dockerignore, with --force, keeps it as `.dockerignore.envkit-bak-<UTC time>[-N]`
# (envkit.output.backup_path) and writes envkit's own in its place.
_BACKUP_NAME = re.compile(r"\.dockerignore\.envkit-bak-(\d{8}T\d{6}Z)(?:-(\d+))?")


def user_dockerignore(base_dir: Path) -> tuple[str | None, list[str]]:
    """The file beside the profile that holds the user's .dockerignore patterns, and the patterns.

    The user's ``.dockerignore`` when it is theirs. When envkit's own stands there (``generate -o .
    --force`` replaced the user's, keeping a backup), the newest backup that is not envkit's own: the
    user's exclusions keep applying to the project copy, whichever file Docker reads for the build
    context. ``(None, [])`` when there is neither. Patterns as :func:`dockerignore_patterns` reads
    them; each file is read bounded (:data:`envkit.safeio.DOCKERIGNORE_MAX`; a larger one or a
    non-file is exit 2).
    """
    path = base_dir / ".dockerignore"
    if not path.is_file():
        return None, []
    raw = read_bounded(path, DOCKERIGNORE_MAX, "a .dockerignore file")
    if not generated_by_envkit(raw):
        return ".dockerignore", dockerignore_patterns(raw)
    backups = []
    for entry in os.scandir(base_dir):
        m = _BACKUP_NAME.fullmatch(entry.name)
        if m and entry.is_file(follow_symlinks=False):
            backups.append(((m.group(1), int(m.group(2) or 0)), entry.name))
    for _, name in sorted(backups, reverse=True):
        raw = read_bounded(base_dir / name, DOCKERIGNORE_MAX, "a .dockerignore backup")
        if not generated_by_envkit(raw):
            return name, dockerignore_patterns(raw)
    return None, []


def read_dockerignore(base_dir: Path) -> list[str]:
    """The user's .dockerignore patterns beside the profile (:func:`user_dockerignore`); [] when there are none."""
    return user_dockerignore(base_dir)[1]


def _tail_matches(parts: list[str], pattern: str) -> bool:
    want = pattern.split("/")
    return len(parts) >= len(want) and all(fnmatchcase(p, w) for p, w in zip(parts[-len(want):], want, strict=True))


def secret_pattern(rel: str, allowed: tuple[str, ...] = ()) -> str | None:
    """The :data:`SECRETS` pattern that keeps file ``rel`` (a /-separated path) out of the image, if any.

    ``allowed``: patterns the profile ships deliberately (``image.ship_secrets``); they keep nothing out.

    >>> secret_pattern("deploy/service-account-prod.json"), secret_pattern("state/terraform.tfstate.backup")
    ('service-account*.json', 'terraform.tfstate*')
    >>> secret_pattern(".ssh/config", allowed=(".ssh/",)) is None
    True
    """
    parts = rel.split("/")
    for pattern in SECRETS:
        if pattern in allowed:
            continue
        if pattern.endswith("/"):  # a folder: anything under it
            folder = pattern.rstrip("/")
            if any(_tail_matches(parts[:n], folder) for n in range(1, len(parts))):
                return pattern
        elif _tail_matches(parts, pattern):
            return pattern
    return None


def secret_folder(rel_dir: str, allowed: tuple[str, ...] = ()) -> bool:
    """True when folder ``rel_dir`` is one of :data:`SECRETS`' folders (``.ssh/``), so a walk skips it."""
    return secret_pattern(rel_dir + "/-", allowed) in {p for p in SECRETS if p.endswith("/")}


def is_secret(rel: str, allowed: tuple[str, ...] = ()) -> bool:
    """True when ``rel`` is a well-known credential file (:func:`secret_pattern`); no ``!`` pattern brings it back."""
    return secret_pattern(rel, allowed) is not None


def ignored(rel: str, rules: list[str]) -> bool:
    """True when ``rel`` (a /-separated path under the project) stays out of the image.

    One path against a pattern list, folders above it included (the list is compiled per call;
    :func:`project_files` compiles it once for a whole tree).
    """
    parts = rel.split("/")
    if is_secret(rel):
        return True
    ignore = DockerIgnore(rules)
    return ignore.excluded(rel) or not all(ignore.descends("/".join(parts[:n])) for n in range(1, len(parts)))


@dataclass(frozen=True)
class Selection:
    """What :func:`select_project` takes: ``files`` (sorted /-separated paths), and ``skipped``: each
    entry that is not a regular file (a FIFO, socket or device), as (path, what it is)."""

    files: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    # What the user should know about the selection, each a warning's text after its key path.
    notes: tuple[str, ...] = ()


def link_note(base_dir: Path, rel: str) -> str:
    """The warning for symbolic link ``rel`` under ``base_dir``, which the project copy leaves out.

    Docker's build context holds a link as a link (moby/go-archive ``tar.go``: ``FileInfoHeader`` of
    the ``lstat``), and the image would then hold a link to a path that exists on this machine only;
    envkit copies regular files alone, so every link it meets is named here, never silently dropped.
    A link pointing out of the project (or through a folder outside it) is never followed: what it
    points at may be anything on this machine (``/etc/passwd``, a home folder), and it is not named.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "a").write_text("x")
    1
    >>> (d / "b").symlink_to("a"); (d / "c").symlink_to("/etc/passwd"); (d / "e").symlink_to("gone")
    >>> link_note(d, "b").split(":")[0]
    "left out 'b' (a symbolic link to 'a', inside the project)"
    >>> link_note(d, "c").split(";")[0]
    "left out 'c': a symbolic link pointing out of the project is never followed"
    >>> link_note(d, "e").split(";")[0]
    "left out 'e': a symbolic link to nothing (its target does not exist)"
    """
    link = base_dir / rel
    root = base_dir.resolve()
    target = Path(os.path.realpath(link))
    if not target.is_relative_to(root):
        return (f"left out {rel!r}: a symbolic link pointing out of the project is never followed; "
                f"copy what it points at into the project, or mount it")
    if not target.exists():
        return (f"left out {rel!r}: a symbolic link to nothing (its target does not exist); "
                f"symbolic links are not copied")
    inside = target.relative_to(root).as_posix()
    return (f"left out {rel!r} (a symbolic link to {inside!r}, inside the project): symbolic links are not "
            f"copied; copy the file, or mount it")


def select_project(base_dir: Path, *, exclude_dirs: tuple[Path, ...] = (), ship: tuple[str, ...] = (),
                   outputs: frozenset[str] = frozenset(), manifest: str | None = None) -> Selection:
    """The files to copy from ``base_dir`` (symlinks left out, each named in :attr:`Selection.notes`) and
    the special files skipped.

    Every entry is judged by ``lstat`` alone: nothing is opened, so a FIFO cannot block the walk.
    ``ship``: :data:`SECRETS` patterns the profile ships deliberately (``image.ship_secrets``).
    ``outputs``: the names envkit writes at the top of an output folder (the target registry's,
    :func:`envkit.plan.registry.output_names`), left out at the top of ``base_dir``; ``manifest``: the
    name of envkit's manifest, whose folder (an output folder inside the project) is left out whole.
    """
    source, rules = user_dockerignore(base_dir)
    ignore = DockerIgnore(rules) if rules else None
    notes: list[str] = []
    if source is not None and source != ".dockerignore":
        notes.append(f"the .dockerignore beside the profile is envkit's own (a generate --force into this folder "
                     f"replaced yours); your patterns still apply to the project copy, read from {source!r}: "
                     f"edit that file to change them, or move it back to .dockerignore and generate into "
                     f"another folder (-o docker)")
    skip = {d.resolve() for d in exclude_dirs}
    out: list[str] = []
    skipped: list[tuple[str, str]] = []
    for root, dirs, files in os.walk(base_dir):
        here = Path(root)
        rel_root = here.relative_to(base_dir).as_posix()
        top = rel_root == "."
        prefix = "" if top else f"{rel_root}/"
        kept = []
        for d in sorted(dirs):
            if d in SKIP_DIRS or (top and d in outputs) or secret_folder(prefix + d, ship):
                continue
            if ignore is not None and not ignore.descends(prefix + d):
                continue
            if (here / d).is_symlink():
                notes.append(link_note(base_dir, prefix + d))
                continue
            if (here / d).resolve() not in skip and not (manifest and (here / d / manifest).exists()):
                kept.append(d)
        dirs[:] = kept
        for name in sorted(files):
            rel = prefix + name
            if (top and name in outputs) or is_secret(rel, ship):
                continue
            if ignore is not None and ignore.excluded(rel):
                continue
            try:
                mode = os.lstat(here / name).st_mode
            except OSError:
                continue  # gone meanwhile
            if stat.S_ISLNK(mode):
                notes.append(link_note(base_dir, rel))
                continue
            if not stat.S_ISREG(mode):
                skipped.append((rel, kind_of(mode)))
                continue
            out.append(rel)
    return Selection(tuple(out), tuple(skipped), tuple(notes))


def project_files(base_dir: Path, *, exclude_dirs: tuple[Path, ...] = (), ship: tuple[str, ...] = (),
                  outputs: frozenset[str] = frozenset(), manifest: str | None = None) -> list[str]:
    """The files to copy, as sorted /-separated paths relative to ``base_dir`` (:func:`select_project`)."""
    return list(select_project(base_dir, exclude_dirs=exclude_dirs, ship=ship, outputs=outputs,
                               manifest=manifest).files)
