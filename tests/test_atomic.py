"""Atomic writes: killed at any step, a writer leaves a complete checkpoint; modes follow umask."""

from __future__ import annotations

import os
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
    "trashed-old",
    "moved-to-old",
    "trashed-incomplete",
    "renamed",
    "trashed-old-after",
]


def test_the_step_list_is_complete(tmp_path: Path) -> None:
    """Each step of STEPS happens in some situation, and no unlisted step exists."""
    seen: list[str] = []
    target = tmp_path / "last"
    atomic.replace_directory(target, _fill("1"), complete=_complete, on_step=seen.append)
    atomic.replace_directory(target, _fill("2"), complete=_complete, on_step=seen.append)
    atomic.old_twin(target).mkdir()  # a leftover twin beside a complete NAME
    atomic.replace_directory(target, _fill("3"), complete=_complete, on_step=seen.append)
    (target / "a.txt").unlink()  # NAME incomplete
    atomic.replace_directory(target, _fill("4"), complete=_complete, on_step=seen.append)
    assert set(seen) == set(STEPS)


def _killed_save(target: Path, version: str, at: str) -> None:
    """Save ``version`` in a child process that dies (os._exit: no cleanup) at step ``at``."""
    pid = os.fork()
    if pid == 0:  # the child: no exception handler or finally clause runs after _exit

        def die(name: str) -> None:
            if name == at:
                os._exit(0)

        try:
            atomic.replace_directory(target, _fill(version), complete=_complete, on_step=die)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _start(target: Path, state: str) -> None:
    """A directory as a previous save left it: complete, only its old twin (killed between
    the two renames), or an incomplete NAME beside a complete twin (the old writer's bug)."""
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    if state in ("twin-only", "incomplete"):
        target.rename(atomic.old_twin(target))
    if state == "incomplete":
        target.mkdir()
        (target / "a.txt").write_text("half")


@pytest.mark.parametrize("state", ["complete", "twin-only", "incomplete"])
@pytest.mark.parametrize("at", STEPS)
def test_a_kill_at_any_step_leaves_a_complete_checkpoint(
    tmp_path: Path, at: str, state: str
) -> None:
    """Kill the writer at each step of the save; then the next save is killed at every step too.

    At every point some complete version is found (the old one or the new one, never a mix),
    and the next save succeeds and leaves no debris.
    """
    target = tmp_path / "last"
    _start(target, state)
    _killed_save(target, "2", at)
    found = atomic.find_complete(target, _complete)
    assert found is not None, f"no complete checkpoint after a kill at {at!r}"
    assert _version(found) in ("1", "2")
    for again in STEPS:  # a second killed save, from whatever the first one left
        _killed_save(target, "3", again)
        found = atomic.find_complete(target, _complete)
        assert found is not None, f"nothing complete after kills at {at!r} then {again!r}"
        assert _version(found) in ("1", "2", "3")
    atomic.replace_directory(target, _fill("4"), complete=_complete)
    assert atomic.find_complete(target, _complete) == target and _version(target) == "4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last"]  # stale temp dirs cleaned


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
    target = tmp_path / "last"
    atomic.replace_directory(target, _fill("1"), complete=_complete)
    target.rename(atomic.old_twin(target))
    target.mkdir()  # what the old writer could leave: a NAME missing one of its files
    (target / "a.txt").write_text("2")
    assert atomic.find_complete(target, _complete) == atomic.old_twin(target)
    atomic.replace_directory(target, _fill("3"), complete=_complete)
    assert _version(target) == "3" and not atomic.old_twin(target).exists()


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
