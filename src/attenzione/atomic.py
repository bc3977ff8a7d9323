"""Atomic writes: a reader (or a resumed run) never sees half a file or half a directory.

Two primitives, used by every module that writes something a later run depends on:

* :func:`write_file` (and :func:`replacing`, the same as a block, for a file written as it
  goes) — write into a temporary file beside the target, flush it to disk, then
  ``os.replace`` it onto the target. A rename within one directory is atomic on POSIX, so
  the target is at every instant either the old complete file or the new complete one.
* :func:`replace_directory` — the same idea for a directory (a checkpoint), which has no
  atomic replace. The protocol, and why each step keeps some complete directory on disk::

      0. NAME a file, a link, or a folder not ours and not empty?  refuse, before any work
      1. fill  .NAME.tmp-XXXX            (NAME, or .NAME.old after a crash, is still complete)
      2. with ``owned``: link into it what the previous version holds that is not ours
      3. NAME ours?     .NAME.old → trash, NAME → .NAME.old         (.NAME.old is complete)
         NAME empty?    remove it
      4. .NAME.tmp-XXXX → NAME                                     (NAME is complete)
      5. .NAME.old → trash; empty the trash

  Nothing is ever deleted in place: a directory is first renamed into ``.NAME.trash-XXXX``
  (atomic) and only then removed, so a kill during a removal cannot leave a half-deleted
  ``.NAME.old`` that looks usable. Leftover ``.NAME.tmp-*`` and ``.NAME.trash-*`` from a
  killed writer are removed by the next write. :func:`find_complete` returns ``NAME`` or, after
  a crash between steps 3 and 4, ``.NAME.old``.

  **Nothing of the user's is deleted.** Only names this module makes (hidden, beginning with
  ``.NAME.``) are ever trashed, and NAME itself only when the caller recognises it as a
  version of its own (``replaceable``): a user's ``NAME.old``, a folder of theirs at NAME, or
  a file is refused in one line, and a file the user added inside a version of ours is
  carried into the next one (``owned`` names what the writer may write; the rest is theirs).

Permissions follow the user's umask (``mkstemp``/``mkdtemp`` alone would make every file
0600 and every directory 0700, whatever the user asked for).

This module is stdlib only (layer 0), so ``data/`` can use it without importing the model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

OLD_SUFFIX = ".old"


def current_umask() -> int:
    """The process umask (reading it requires setting it; it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def replacing(path: str | Path, *, mode: int | None = None, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary sibling of ``path`` for the block to fill. When the block ends without an
    exception the file gets ``mode`` (None: what the umask gives a new file), is flushed to
    disk and renamed onto ``path``; otherwise it is removed and ``path`` is as it was."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask() if mode is None else mode)
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_file(
    path: str | Path, write: Callable[[Path], object], *, mode: int | None = None
) -> Path:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it onto ``path``
    (:func:`replacing`)."""
    with replacing(path, mode=mode) as tmp:
        write(tmp)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_file(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return write_file(path, lambda p: p.write_bytes(data))


def old_twin(target: Path) -> Path:
    """``.NAME.old``: where the previous version waits while the new one is renamed in. It is
    hidden and named by this module alone (as ``.NAME.tmp-*`` and ``.NAME.trash-*`` are), so a
    user's own ``NAME.old`` beside ``NAME`` is never taken for it."""
    return target.with_name(f".{target.name}{OLD_SUFFIX}")


def find_complete(target: str | Path, complete: Callable[[Path], bool]) -> Path | None:
    """``NAME`` if complete, else ``.NAME.old`` if complete (a crash mid-swap), else None."""
    target = Path(target)
    for candidate in (target, old_twin(target)):
        if candidate.is_dir() and complete(candidate):
            return candidate
    return None


def _trash(path: Path) -> None:
    """Rename ``path`` out of the way atomically, then delete it."""
    bin_ = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.trash-"))
    os.rename(path, bin_ / "x")
    shutil.rmtree(bin_, ignore_errors=True)


def clean_stale(target: Path) -> None:
    """Remove the temporary and trash directories a killed writer of ``target`` left behind."""
    if not target.parent.is_dir():
        return
    prefixes = (
        f".{target.name}.tmp-",
        f".{target.name}.trash-",
        f".{old_twin(target).name}.trash-",
    )
    for prefix in (*prefixes, f".{target.name}{OLD_SUFFIX}.trash-"):  # the last: before 0.x
        for stale in target.parent.glob(prefix + "*"):
            shutil.rmtree(stale, ignore_errors=True)


def _fix_permissions(root: Path) -> None:
    """Give ``root`` and everything in it the modes the user's umask asks for."""
    mask = current_umask()
    os.chmod(root, 0o777 & ~mask)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            os.chmod(Path(dirpath) / d, 0o777 & ~mask)
        for f in filenames:
            file = Path(dirpath) / f
            os.chmod(file, 0o666 & ~mask)
            _fsync(file)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(src, dst)


def _carry_over(previous: Path, tmp: Path, owned: Callable[[str], bool]) -> None:
    """Put into ``tmp`` each entry of ``previous`` that the writer does not own and did not
    write now: what a user added to a directory we replace stays in the new version. Files
    are hard-linked where the file system allows (nothing is copied, and ``previous`` keeps
    its own until it is trashed), so a kill at any point loses none of them."""
    for entry in previous.iterdir():
        dest = tmp / entry.name
        if owned(entry.name) or dest.exists() or dest.is_symlink():
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), dest)
        elif entry.is_dir():
            shutil.copytree(entry, dest, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(entry), str(dest))


def check_replaceable(target: Path, ours: Callable[[Path], bool]) -> None:
    """Refuse, before any work, a ``target`` that :func:`replace_directory` would have to
    delete something of the user's to replace: a file or a link, a folder that is not ``ours``
    and not empty, the current directory (or one that holds it), or a hidden twin
    ``.NAME.old`` that is not ``ours``."""
    target = Path(os.path.abspath(target))
    here = Path.cwd()
    if target == here or target in here.parents:
        raise ValueError(f"{target} is the current directory or holds it: give another one")
    if target.is_symlink():
        raise FileExistsError(f"{target} is a symbolic link: give the directory itself")
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} is a file, not a directory")
    if target.is_dir() and not ours(target) and any(target.iterdir()):
        raise FileExistsError(
            f"{target} holds files this command did not write: give a new or empty directory"
        )
    old = old_twin(target)
    if (old.exists() or old.is_symlink()) and (
        old.is_symlink() or not old.is_dir() or not ours(old)
    ):
        raise FileExistsError(f"{old} is in the way and is not a version written here: move it")


def replace_directory(
    target: str | Path,
    fill: Callable[[Path], object],
    *,
    complete: Callable[[Path], bool],
    replaceable: Callable[[Path], bool] | None = None,
    owned: Callable[[str], bool] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> Path:
    """Replace directory ``target`` by one that ``fill(tmp)`` writes, with the protocol above.

    ``complete(path)`` says whether a directory is a complete version (what a reader needs);
    ``replaceable(path)`` (default ``complete``) whether an existing one is a version of ours
    that may be replaced. Anything else at ``target`` is refused (:func:`check_replaceable`)
    before ``fill`` runs, except an empty folder. With ``owned`` (the names of the entries
    this writer may write, a predicate), the entries of the previous version that are not
    ``owned`` and that ``fill`` did not write — a user's own files — are kept in the new one;
    without it, the new version is what ``fill`` wrote. ``on_step(name)`` is called after each
    step; the tests use it to kill the writer there.
    """
    target = Path(os.path.abspath(target))
    ours = replaceable or complete
    check_replaceable(target, ours)
    target.parent.mkdir(parents=True, exist_ok=True)
    step = on_step or (lambda _name: None)
    clean_stale(target)
    step("cleaned")
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        fill(tmp)
        step("filled")
        _fix_permissions(tmp)
        if not complete(tmp):
            raise RuntimeError(f"internal error: {tmp} is incomplete after writing")
        step("synced")
        check_replaceable(target, ours)  # what fill's minutes may have changed
        old = old_twin(target)
        current = target.is_dir() and ours(target)
        previous = target if current else old if old.is_dir() else None
        if owned is not None and previous is not None:
            _carry_over(previous, tmp, owned)  # after the permissions: a user's keep theirs
            step("carried")
        if current:
            if old.exists():
                _trash(old)
                step("trashed-old")
            os.rename(target, old)
            step("moved-to-old")
        elif target.is_dir():
            target.rmdir()  # empty (check_replaceable): no version to keep
            step("removed-empty")
        os.rename(tmp, target)
        step("renamed")
        if old.exists():
            _trash(old)
            step("trashed-old-after")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
