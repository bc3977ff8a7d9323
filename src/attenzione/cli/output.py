"""Output files that are never half-written: the translation goes to a temporary file beside
the target, renamed over it (``os.replace``) only once it is complete.

So ``translate -i F -o F`` (or ``-o ./F``, or ``-o`` a symlink to F) cannot destroy F: until
the rename F is what it was, whole; after it, F is the whole translation. Interrupted at any
moment — Ctrl-C, SIGTERM, SIGHUP, an error, a crash — the target is untouched and the
temporary file is removed (a SIGKILL or a power cut leaves a hidden ``.F.*.part`` beside it,
never a damaged F).

Why not keep a partial output? Written in place, a killed run kept the lines it had done; but
a target that is also the input, or an earlier good translation, would be lost, and there is
no way to resume from a partial file anyway. Whoever wants to watch lines arrive, or keep
them, streams to standard output (``attenzione translate -i F > G``), which still writes each
line as it is done.
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TextIO

from attenzione import atomic

PART_SUFFIX = ".part"


def target_of(path: Path) -> Path:
    """The file a write to ``path`` must replace: a symlink's target (the link stays a
    link), else ``path`` itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextmanager
def replaced_text(path: Path, *, newline: str = "") -> Iterator[TextIO]:
    """A UTF-8 text file that becomes ``path`` when the block ends without an exception; the
    block's file is a temporary sibling of the target, removed if it does not. A ``path``
    that is not a regular file (``/dev/stdout``, a named pipe, ``/dev/null``) is written to
    directly: there is nothing to replace, and renaming over a device would replace it."""
    if not _regular_or_missing(path):
        with open(path, "w", encoding="utf-8", newline=newline) as direct:
            yield direct
        return
    target = target_of(path)
    mode = _mode_for(target)
    with (
        atomic.replacing(target, mode=mode, suffix=PART_SUFFIX) as tmp,
        open(tmp, "w", encoding="utf-8", newline=newline) as f,
    ):
        yield f


def _regular_or_missing(path: Path) -> bool:
    """Whether ``path`` (a symlink followed) is a regular file or nothing yet."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True


def _mode_for(target: Path) -> int:
    """The mode the new file gets: the replaced file's, or what the umask gives a new one."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~atomic.current_umask()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that cleanup runs as for Ctrl-C;
    ``signum`` says which (the exit status is 128 + it, as the shell reports a signal)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` (a
    KeyboardInterrupt) instead of ending the process on the spot: ``finally`` blocks and
    context managers (the temporary output above) clean up. Only the main thread can; a
    signal that is ignored (``nohup`` ignores SIGHUP) stays ignored."""
    names = [
        n for n in ("SIGTERM", "SIGHUP")
        if hasattr(signal, n) and signal.getsignal(getattr(signal, n)) is not signal.SIG_IGN
    ]  # fmt: skip

    def raise_terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    try:
        previous = {n: signal.signal(getattr(signal, n), raise_terminated) for n in names}
    except ValueError:  # not the main thread: leave the signals alone
        yield
        return
    try:
        yield
    finally:
        for n, handler in previous.items():
            signal.signal(getattr(signal, n), handler)
