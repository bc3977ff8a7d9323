"""Atomic writes: a reader (or a resumed run) never sees half a file or half a directory.

Two primitives, used by every module that writes something a later run depends on:

* :func:`write_file` (and :func:`replacing`, the same as a block, for a file written as it
  goes) — write into a temporary file beside the target, flush it to disk, then
  ``os.replace`` it onto the target. A rename within one directory is atomic on POSIX, so
  the target is at every instant either the old complete file or the new complete one.
* :func:`replace_directory` — the same idea for a directory (a checkpoint), which has no
  atomic replace. The protocol, and why each step keeps some complete directory on disk::

      1. fill  .NAME.tmp-XXXX            (NAME, or NAME.old after a crash, is still complete)
      2. NAME complete?   NAME.old → trash, NAME → NAME.old      (NAME.old is complete)
         NAME incomplete? NAME → trash                           (NAME.old, if any, is)
      3. .NAME.tmp-XXXX → NAME                                   (NAME is complete)
      4. NAME.old → trash; empty the trash

  Nothing is ever deleted in place: a directory is first renamed into ``.NAME.trash-XXXX``
  (atomic) and only then removed, so a kill during a removal cannot leave a half-deleted
  ``NAME.old`` that looks usable. Leftover ``.NAME.tmp-*`` and ``.NAME.trash-*`` from a
  killed writer are removed by the next write. :func:`find_complete` returns ``NAME`` or, after
  a crash between steps 2 and 3, ``NAME.old``.

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
    """``NAME.old``: where the previous version waits while the new one is renamed in."""
    return target.with_name(target.name + OLD_SUFFIX)


def find_complete(target: str | Path, complete: Callable[[Path], bool]) -> Path | None:
    """``NAME`` if complete, else ``NAME.old`` if complete (a crash mid-swap), else None."""
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
    for prefix in (f".{target.name}.tmp-", f".{target.name}.trash-", f".{target.name}.old.trash-"):
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


def replace_directory(
    target: str | Path,
    fill: Callable[[Path], object],
    *,
    complete: Callable[[Path], bool],
    on_step: Callable[[str], None] | None = None,
) -> Path:
    """Replace directory ``target`` by one that ``fill(tmp)`` writes, with the protocol above.

    ``complete(path)`` says whether a directory is a complete version (what a reader needs).
    ``on_step(name)`` is called after each step; the tests use it to kill the writer there.
    """
    target = Path(target)
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
        old = old_twin(target)
        if target.is_dir() and complete(target):
            if old.exists():
                _trash(old)
                step("trashed-old")
            os.rename(target, old)
            step("moved-to-old")
        elif target.exists():
            _trash(target)  # incomplete: the old twin (if any) is the complete one
            step("trashed-incomplete")
        os.rename(tmp, target)
        step("renamed")
        if old.exists():
            _trash(old)
            step("trashed-old-after")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
