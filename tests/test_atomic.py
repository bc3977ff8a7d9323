"""Atomic writes: killed at any step, a writer leaves a complete checkpoint; modes follow umask."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from attenzione import atomic


def _complete(d: Path) -> bool:
    return (d / "a.txt").is_file() and (d / "b.txt").is_file()


def _fill(version: str) -> Callable[[Path], None]:
    def fill(tmp: Path) -> None:
        atomic.write_text(tmp / "a.txt", version)
        atomic.write_text(tmp / "b.txt", version)

    return fill


def _version(found: Path) -> str:
    a, b = (found / "a.txt").read_text(), (found / "b.txt").read_text()
    assert a == b, "a half-written mixture of two versions"
    return a


# Every step replace_directory reports, in order. A kill is tried after each of them; where a
# save does not pass a step (no old twin to trash, say) that kill is simply not reached.
STEPS = [
    "cleaned",
    "filled",
    "synced",
    "carried",
    "trashed-old",
    "moved-to-old",
    "removed-empty",
    "renamed",
    "trashed-old-after",
]
OURS = frozenset(("a.txt", "b.txt", "c.txt")).__contains__  # what _fill may write


def test_the_step_list_is_complete(tmp_path: Path) -> None:
    """Each step of STEPS happens in some situation, and no unlisted step exists."""
    seen: list[str] = []
    target = tmp_path / "last"

    def save(version: str) -> None:
        atomic.replace_directory(
            target, _fill(version), complete=_complete, owned=OURS, on_step=seen.append
        )

    save("1")
    save("2")
    shutil.copytree(target, atomic.old_twin(target))  # a leftover twin beside a complete NAME
    save("3")
    shutil.rmtree(target)
    target.mkdir()  # an empty NAME
    save("4")
    assert set(seen) == set(STEPS)


def _killed_save(target: Path, version: str, at: str) -> None:
    """Save ``version`` in a child process that dies (os._exit: no cleanup) at step ``at``."""
    pid = os.fork()
    if pid == 0:  # the child: no exception handler or finally clause runs after _exit

        def die(name: str) -> None:
            if name == at:
                os._exit(0)

        try:
            atomic.replace_directory(
                target, _fill(version), complete=_complete, owned=OURS, on_step=die
            )
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _start(target: Path, state: str) -> None:
    """A directory as a previous save left it, with a file the user added: complete, or only
    its old twin (killed between the two renames)."""
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    (target / "mine.txt").write_text("mine")
    if state == "twin-only":
        target.rename(atomic.old_twin(target))


@pytest.mark.parametrize("state", ["complete", "twin-only"])
@pytest.mark.parametrize("at", STEPS)
def test_a_kill_at_any_step_leaves_a_complete_checkpoint(
    tmp_path: Path, at: str, state: str
) -> None:
    """Kill the writer at each step of the save; then the next save is killed at every step too.

    At every point some complete version is found (the old one or the new one, never a mix),
    it holds the file the user added, and the next save succeeds and leaves no debris.
    """
    target = tmp_path / "last"
    _start(target, state)
    _killed_save(target, "2", at)
    found = atomic.find_complete(target, _complete)
    assert found is not None, f"no complete checkpoint after a kill at {at!r}"
    assert _version(found) in ("1", "2")
    assert (found / "mine.txt").read_text() == "mine"
    for again in STEPS:  # a second killed save, from whatever the first one left
        _killed_save(target, "3", again)
        found = atomic.find_complete(target, _complete)
        assert found is not None, f"nothing complete after kills at {at!r} then {again!r}"
        assert _version(found) in ("1", "2", "3")
        assert (found / "mine.txt").read_text() == "mine", (at, again)
    atomic.replace_directory(target, _fill("4"), complete=_complete, owned=OURS)
    assert atomic.find_complete(target, _complete) == target and _version(target) == "4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last"]  # stale temp dirs cleaned
    assert (target / "mine.txt").read_text() == "mine"


def test_only_the_old_twin_left_is_not_deleted_before_the_new_one_is_in_place(
    tmp_path: Path,
) -> None:
    """The state a kill between the two renames leaves: NAME.old complete, no NAME. The next
    save must keep NAME.old until the new NAME is there (the old code deleted it first)."""
    target = tmp_path / "last"
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    target.rename(atomic.old_twin(target))
    states: list[Path | None] = []
    atomic.replace_directory(
        target,
        _fill("2"),
        complete=_complete,
        on_step=lambda _n: states.append(atomic.find_complete(target, _complete)),
    )
    assert all(s is not None for s in states)


def test_an_incomplete_directory_is_never_taken_for_a_checkpoint(tmp_path: Path) -> None:
    """What an old writer could leave: a NAME missing one of its files beside a complete
    twin. The twin is what a reader finds; the next save refuses NAME (it is not a version
    of ours) and deletes nothing."""
    target = tmp_path / "last"
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    target.rename(atomic.old_twin(target))
    target.mkdir()
    (target / "a.txt").write_text("2")
    assert atomic.find_complete(target, _complete) == atomic.old_twin(target)
    with pytest.raises(FileExistsError, match="did not write"):
        atomic.replace_directory(target, _fill("3"), complete=_complete)
    assert (target / "a.txt").read_text() == "2" and _version(atomic.old_twin(target)) == "1"


# ---------------------------------------------------------------- nothing of the user's is lost
def _never(_tmp: Path) -> None:
    raise AssertionError("fill ran: the refusal must come before any work")


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_users_own_name_old_beside_the_target_is_never_touched(tmp_path: Path, kind: str) -> None:
    """``X.old`` is the user's name, not ours: saving X (new, then again) leaves it as it was."""
    target, theirs = tmp_path / "last", tmp_path / "last.old"
    if kind == "file":
        theirs.write_text("my notes")
    else:
        theirs.mkdir()
        (theirs / "a.txt").write_text("mine")
        (theirs / "b.txt").write_text("mine")  # even one that looks complete
    for version in ("1", "2", "3"):
        atomic.replace_directory(target, _fill(version), complete=_complete)
    assert _version(target) == "3"
    if kind == "file":
        assert theirs.read_text() == "my notes"
    else:
        assert _version(theirs) == "mine"
    assert atomic.find_complete(target, _complete) == target


def test_a_folder_that_is_not_a_version_of_ours_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("years of work")
    with pytest.raises(FileExistsError, match="did not write"):
        atomic.replace_directory(target, _never, complete=_complete)
    assert [p.name for p in target.iterdir()] == ["thesis.tex"]
    file = tmp_path / "a-file"
    file.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        atomic.replace_directory(file, _never, complete=_complete)
    link = tmp_path / "link"
    atomic.replace_directory(tmp_path / "real", _fill("1"), complete=_complete)
    link.symlink_to(tmp_path / "real")
    with pytest.raises(FileExistsError, match="symbolic link"):
        atomic.replace_directory(link, _never, complete=_complete)
    assert link.is_symlink() and file.read_text() == "x"


def test_a_twin_in_the_way_that_is_not_ours_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "last"
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    atomic.old_twin(target).write_text("someone's file")
    with pytest.raises(FileExistsError, match="in the way"):
        atomic.replace_directory(target, _never, complete=_complete)
    assert atomic.old_twin(target).read_text() == "someone's file" and _version(target) == "1"


def test_the_current_directory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out .`` (or a folder holding the current one): a rename would pull the directory
    from under the shell, so it is refused however complete it is."""
    atomic.replace_directory(tmp_path / "v", _fill("1"), complete=_complete)
    monkeypatch.chdir(tmp_path / "v")
    for target in (Path("."), Path(".."), tmp_path / "v"):
        with pytest.raises(ValueError, match="current directory"):
            atomic.replace_directory(target, _never, complete=_complete)
    assert _version(tmp_path / "v") == "1"


def test_what_the_user_added_is_kept_and_only_our_names_are_replaced(tmp_path: Path) -> None:
    """With ``owned``: the user's files and folders stay (hard-linked, not copied); a file of
    ours the new version does not write is gone; without ``owned`` the version is what fill
    wrote."""
    target = tmp_path / "export"

    def with_c(tmp: Path) -> None:
        _fill("1")(tmp)
        atomic.write_text(tmp / "c.txt", "stale")

    atomic.replace_directory(target, with_c, complete=_complete, owned=OURS)
    (target / "notes.md").write_text("mine")
    (target / "extra").mkdir()
    (target / "extra" / "x.bin").write_bytes(b"\0" * 10)
    inode = (target / "notes.md").stat().st_ino
    atomic.replace_directory(target, _fill("2"), complete=_complete, owned=OURS)
    assert _version(target) == "2" and not (target / "c.txt").exists()
    assert (target / "notes.md").read_text() == "mine"
    assert (target / "extra" / "x.bin").read_bytes() == b"\0" * 10
    assert (target / "notes.md").stat().st_ino == inode  # linked, not copied
    atomic.replace_directory(target, _fill("3"), complete=_complete)
    assert sorted(p.name for p in target.iterdir()) == ["a.txt", "b.txt"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_and_directories_follow_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        target = tmp_path / "ckpt"
        atomic.replace_directory(target, _fill("1"), complete=_complete)
        single = atomic.write_text(tmp_path / "single.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~umask
    assert stat.S_IMODE((target / "a.txt").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(single.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_leaves_the_previous_file(tmp_path: Path) -> None:
    path = atomic.write_text(tmp_path / "f.txt", "old")

    def broken(p: Path) -> None:
        p.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic.write_file(path, broken)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_the_kill_harness_finds_the_old_writers_hole(tmp_path: Path) -> None:
    """Control: the swap this package used before (delete NAME.old first, then rename) fails
    the same check — from the state a kill between its renames leaves, the next save deleted
    the only complete copy before the new one existed."""
    import shutil
    import tempfile

    def old_replace(target: Path, fill: Callable[[Path], None], on_step: Callable[[str], None]):
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
        fill(tmp)
        old = atomic.old_twin(target)
        if old.exists():
            shutil.rmtree(old)
        on_step("old-deleted")
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        if old.exists():
            shutil.rmtree(old)

    target = tmp_path / "last"
    _start(target, "twin-only")
    pid = os.fork()
    if pid == 0:
        try:
            old_replace(target, _fill("2"), lambda name: os._exit(0))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert atomic.find_complete(target, _complete) is None  # the hole the new writer closes
