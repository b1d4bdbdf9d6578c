"""The write plan as a pure function: the folder is described, never touched (its paths do not exist)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envkit.errors import OutputConflict
from envkit.manifest import Manifest
from envkit.targets import OutputFile
from envkit.writeplan import Current, Destination, Folder, Leftover, SameCopy, orphan_candidates, plan_writes

OUT = Path("/nonexistent/out")  # nothing may be read or written: the plan sees only what it is given
SIG = (1, 2, 3, 4, 5)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def at(path: str, current: bytes | None = None, mode: int = 0o644) -> Destination:
    now = None if current is None else Current(sha(current), mode, current)
    return Destination(OUT / path, True, current=now)


def test_a_file_holding_its_bytes_is_unchanged_and_only_its_mode_is_put_right():
    files = [OutputFile("run.sh", b"x\n", 0o755), OutputFile("compose.yaml", b"y\n")]
    folder = Folder(Manifest({"run.sh": sha(b"x\n")}), {"run.sh": at("run.sh", b"x\n", 0o644),
                                                        "compose.yaml": at("compose.yaml", b"y\n")})
    plan = plan_writes(OUT, files, folder)
    assert plan.writes == () and plan.unchanged == ("run.sh", "compose.yaml")
    assert plan.chmods == ((OUT / "run.sh", 0o755),) and plan.changes
    # A file envkit did not record but that holds exactly what it renders is taken into the manifest.
    assert plan.manifest.files == {"run.sh": sha(b"x\n"), "compose.yaml": sha(b"y\n")}


def test_nothing_to_change_is_no_change():
    files = [OutputFile("run.sh", b"x\n")]
    plan = plan_writes(OUT, files, Folder(Manifest({"run.sh": sha(b"x\n")}), {"run.sh": at("run.sh", b"x\n")}))
    assert not plan.changes and plan.unchanged == ("run.sh",)


def test_every_edited_file_is_named_and_nothing_is_planned_without_force():
    files = [OutputFile("a", b"new a"), OutputFile("b", b"new b"), OutputFile("c", b"new c")]
    folder = Folder(Manifest({"a": sha(b"old a"), "b": sha(b"old b")}),
                    {"a": at("a", b"edited a"), "b": at("b", b"old b"), "c": at("c", b"the user's c")})
    with pytest.raises(OutputConflict) as e:
        plan_writes(OUT, files, folder)
    # a: edited since envkit wrote it; c: never envkit's. b is envkit's, unedited: replaced without asking.
    assert f"{OUT / 'a'}, {OUT / 'c'}:" in str(e.value) and str(OUT / "b") not in str(e.value)
    plan = plan_writes(OUT, files, folder, force=True)
    assert [(w.file.path, w.backup, w.old) for w in plan.writes] == [
        ("a", True, b"edited a"), ("b", False, None), ("c", True, b"the user's c")]
    assert plan.manifest.files == {p: sha(b"new " + p.encode()) for p in "abc"}


def test_a_new_file_is_written_without_a_conflict():
    plan = plan_writes(OUT, [OutputFile("a", b"1")], Folder(None, {"a": at("a")}))
    assert [w.file.path for w in plan.writes] == ["a"] and not plan.writes[0].backup


def test_a_file_over_the_backup_limit_is_planned_for_a_backup_read_later():
    big = Destination(OUT / "a", True, current=Current("0" * 64, 0o644, None))
    (w,) = plan_writes(OUT, [OutputFile("a", b"1")], Folder(None, {"a": big}), force=True).writes
    assert w.backup and w.old is None


def test_copies_are_judged_by_content_never_a_conflict_and_their_mode_follows_a_copied_source():
    src = Path("/nonexistent/src")
    files = [OutputFile(f".envkit/{n}", b"", source=src / n) for n in ("linked", "copied", "stale")]
    folder = Folder(Manifest({".envkit/stale": "1" * 64}), {
        ".envkit/linked": Destination(OUT / ".envkit/linked", True, same_copy=SameCopy("a" * 64, SIG, True, 0o600, 0o644)),
        ".envkit/copied": Destination(OUT / ".envkit/copied", True, same_copy=SameCopy("b" * 64, SIG, False, 0o600, 0o644)),
        ".envkit/stale": Destination(OUT / ".envkit/stale", True)})
    plan = plan_writes(OUT, files, folder)
    assert plan.unchanged == (".envkit/linked", ".envkit/copied")
    assert plan.chmods == ((OUT / ".envkit/copied", 0o644),)
    assert [w.file.path for w in plan.writes] == [".envkit/stale"] and not plan.writes[0].backup
    assert plan.copies == {".envkit/linked": SIG, ".envkit/copied": SIG}
    # The rewritten copy's digest is what apply stages, not the stale record.
    assert ".envkit/stale" not in plan.manifest.files


def test_leftovers_of_a_requested_target_go_when_unedited_and_stay_otherwise():
    recorded = {"wsl.conf": sha(b"w"), "setup-wsl.ps1": sha(b"s"), ".wslconfig": sha(b"c"), "gone": sha(b"g"),
                "k8s.yaml": sha(b"k")}
    owners = {p: "wsl" for p in recorded} | {"k8s.yaml": "k8s"}
    manifest = Manifest(recorded, owners)
    files = [OutputFile("run.sh", b"r")]
    assert orphan_candidates(files, manifest, ("run", "wsl")) == [".wslconfig", "gone", "setup-wsl.ps1", "wsl.conf"]
    folder = Folder(manifest, {"run.sh": at("run.sh")}, leftovers={
        "wsl.conf": Leftover("file", sha(b"w")), "setup-wsl.ps1": Leftover("file", sha(b"edited")),
        ".wslconfig": Leftover("other"), "gone": Leftover("gone")})
    plan = plan_writes(OUT, files, folder, owners={"run.sh": "run"}, requested=("run", "wsl"))
    assert plan.removed == ("gone", "wsl.conf") and plan.remove == ("gone", "wsl.conf")
    assert plan.kept == (".wslconfig", "setup-wsl.ps1")
    # The k8s target was not requested: its file is neither judged nor forgotten.
    assert plan.manifest.files.keys() == {".wslconfig", "setup-wsl.ps1", "k8s.yaml", "run.sh"}
    assert plan.manifest.owners == {".wslconfig": "wsl", "setup-wsl.ps1": "wsl", "k8s.yaml": "k8s", "run.sh": "run"}
    # Without the requested targets, no target's leftovers are judged.
    assert orphan_candidates(files, manifest, None) == [] and plan_writes(OUT, files, folder).remove == ()


def test_an_exact_folder_loses_what_envkit_wrote_there_and_keeps_the_users():
    manifest = Manifest({".envkit/project/old.py": sha(b"o"), ".envkit/project/deleted.py": sha(b"d")})
    files = [OutputFile(".envkit/project/train.py", b"", source=Path("/nonexistent/train.py"))]
    folder = Folder(manifest, {".envkit/project/train.py": Destination(OUT / ".envkit/project/train.py", True)},
                    found=(".envkit/project/mine.txt", ".envkit/project/old.py"),
                    subfolders=(OUT / ".envkit/project", OUT / ".envkit"))
    plan = plan_writes(OUT, files, folder, exact=(".envkit",))
    # old.py: written by envkit, no longer rendered (edited or not: its content is not even read).
    assert plan.pruned == (".envkit/project/old.py",) and plan.foreign == (".envkit/project/mine.txt",)
    # deleted.py: recorded, already gone: forgotten, not reported.
    assert plan.remove == (".envkit/project/deleted.py", ".envkit/project/old.py") and plan.removed == ()
    assert plan.folders == (OUT / ".envkit/project", OUT / ".envkit")
    assert ".envkit/project/old.py" not in plan.manifest.files


paths = st.sampled_from(["a", "b", ".envkit/x", ".envkit/y", "c/d", "mine"])


@settings(max_examples=300, deadline=None)
@given(recorded=st.dictionaries(paths, st.sampled_from(["0" * 64, "1" * 64]), max_size=6),
       owners=st.dictionaries(paths, st.sampled_from(["run", "wsl", "k8s"]), max_size=6),
       rendered=st.sets(paths, max_size=4), found=st.sets(paths, max_size=6),
       left=st.sampled_from(["gone", "file", "other"]), requested=st.sampled_from([None, ("run",), ("run", "wsl")]))
def test_only_what_envkit_recorded_and_no_longer_renders_is_ever_removed(recorded, owners, rendered, found, left,
                                                                          requested):
    manifest = Manifest(recorded, owners)
    files = [OutputFile(p, b"new") for p in sorted(rendered)]
    candidates = orphan_candidates(files, manifest, requested, (".envkit",))
    folder = Folder(manifest, {p: at(p) for p in rendered},
                    leftovers={p: Leftover(left, "0" * 64 if left == "file" else None) for p in candidates},
                    found=tuple(sorted(p for p in found if p.startswith(".envkit/") and p not in rendered)))
    plan = plan_writes(OUT, files, folder, owners={p: "run" for p in rendered}, requested=requested,
                       exact=(".envkit",))
    assert set(plan.remove) <= set(recorded) - rendered
    assert set(plan.foreign).isdisjoint(plan.remove) and set(plan.kept).isdisjoint(plan.remove)
    assert set(plan.manifest.files) == (set(recorded) | rendered) - set(plan.remove)
