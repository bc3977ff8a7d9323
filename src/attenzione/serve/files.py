"""The download area of ``/translate_file``: translated documents, kept on disk for a while.

LibreTranslate's file flow is two requests: ``POST /translate_file`` (multipart ``file``,
``source``, ``target``) answers ``{"translatedFileUrl": ".../download_file/NAME"}``, and a
``GET`` of that address gives the translated file. The upload itself is never written to
disk: :mod:`attenzione.documents` reads it from memory. Only the translation is stored, in
one directory of its own, under a name made of 128 random bits and the upload's file name
made safe (:func:`safe_name`) — the name is the only key to it, and nothing outside the
directory can be named.

Why on disk, in a directory that outlives the process: a client that was just answered 200
must be able to download its file even if the service restarts before it does (a deploy, a
SIGTERM). ``attenzione serve`` keeps the area in the user's cache directory
(:func:`default_dir`) or the operator's ``--files-dir``, and a new process serves what the
old one stored. Each file's **expiry is its modification time** (set when it is written:
now + ``ttl``), so the lifetime a file was given holds whatever ``ttl`` the next process
runs with; files past it are removed (checked at every upload and download, at start and at
stop). A directory the store creates is private (``0700``) and so is every file (``0600``).
A store given no directory (the library's default) makes a temporary one and removes it
when it closes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import unicodedata
import uuid
from pathlib import Path, PurePosixPath, PureWindowsPath

from attenzione import atomic

# a stored file: 32 hex digits, a dot, a name safe_name gives back unchanged
_TOKEN = re.compile(r"[0-9a-f]{32}\.")
# the temporary sibling of a write that a crash left behind
_PARTIAL = re.compile(r"\.[0-9a-f]{32}\..+\.tmp", re.DOTALL)
# a partial file older than this is a crash's leftover (a write takes milliseconds)
_PARTIAL_AGE = 3600.0
_MAX_CHARS = 100  # of a safe name
_MAX_BYTES = 160  # of a safe name in UTF-8: with the token and a write's suffixes, < 255

MEDIA_TYPES = {
    ".txt": "text/plain; charset=utf-8",
    ".srt": "application/x-subrip",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".odt": "application/vnd.oasis.opendocument.text",
}


def default_dir() -> Path:
    """Where ``attenzione serve`` keeps translated files unless told: the user's cache
    directory (``$XDG_CACHE_HOME``, else ``~/.cache``) ``/attenzione/files``."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "attenzione" / "files"


def _word(ch: str) -> bool:
    """A character a name keeps: a letter, a mark or a digit of any script, ``_`` or ``-``."""
    return unicodedata.category(ch)[0] in "LMN" or ch in "_-"


def safe_name(filename: str) -> str:
    """The last part of an uploaded file's name with its letters and digits (of any script)
    kept and every run of anything else — separators, dots, spaces, control characters —
    made one ``_``; its suffix ASCII and lower case; at most 100 characters and 160 bytes
    of UTF-8: ``"../../etc/Résumé café 猫.txt"`` → ``"Résumé_café_猫.txt"``."""
    base = PureWindowsPath(PurePosixPath(filename).name).name
    base = unicodedata.normalize("NFC", base)  # "é" sent as e + accent is one letter
    stem, dot, suffix = base.rpartition(".")
    if not dot:
        stem, suffix = base, ""
    clean = "".join(ch if _word(ch) else " " for ch in stem)
    clean = "_".join(clean.split()).strip("_-")
    ext = re.sub(r"[^A-Za-z0-9]+", "", suffix)[:10].lower()
    tail = "." + ext if ext else ""
    keep = _MAX_CHARS - len(tail)
    while len(clean[:keep].encode("utf-8")) > _MAX_BYTES - len(tail):
        keep -= 1
    clean = clean[:keep].rstrip("_-") or "document"
    return clean + tail


def valid_name(name: str) -> bool:
    """Whether ``name`` is one a store could have issued (a token and a safe name)."""
    return bool(_TOKEN.match(name)) and safe_name(name[33:]) == name[33:]


def ascii_name(name: str) -> str:
    """A download name in ASCII, for clients that do not read RFC 5987's ``filename*``."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    stem, dot, ext = plain.rpartition(".")
    stem = "_".join(re.sub(r"[^A-Za-z0-9_-]+", " ", stem if dot else plain).split())
    return (stem.strip("_-") or "document") + ("." + ext if dot and ext else "")


class StoreFull(Exception):
    """The download area holds its most bytes already."""


class FileStore:
    """Translated files under random names in ``root`` (a new temporary directory, made at
    the first file and removed at :meth:`close`, when None), each kept ``ttl`` seconds
    from when it was written; at most ``max_bytes`` in all."""

    def __init__(
        self, root: Path | None = None, ttl: float = 1800.0, max_bytes: int = 1024**3
    ) -> None:
        if ttl <= 0 or max_bytes <= 0:
            raise ValueError(f"ttl and max_bytes must be > 0, got {ttl} and {max_bytes}")
        self.owned = root is None
        self._root = root
        self._made = False  # the directory made (or checked) once, at the first file
        self.ttl = ttl
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        """The directory (made now, private, if it does not exist yet)."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="attenzione-files-"))  # 0700
            elif not self._made and not self._root.is_dir():
                self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(self._root, 0o700)  # mkdir's mode is cut by the umask
            self._made = True
            return self._root

    def put(self, data: bytes, filename: str) -> str:
        """Store ``data``; the name to download it by. :class:`StoreFull` when the area
        would hold more than ``max_bytes``."""
        self.sweep()
        held = sum(p.stat().st_size for p in self._own_files())
        if held + len(data) > self.max_bytes:
            raise StoreFull(
                f"the download area is full ({held} of {self.max_bytes} bytes, kept "
                f"{self.ttl:g} s each); retry later"
            )
        name = f"{uuid.uuid4().hex}.{safe_name(filename)}"
        self._write(self.root / name, data, time.time() + self.ttl)
        return name

    @staticmethod
    def _write(path: Path, data: bytes, expires: float) -> None:
        """Write ``path`` whole or not at all (:func:`attenzione.atomic.write_file`), private
        (0600), with its expiry as its modification time."""

        def fill(tmp: Path) -> None:
            tmp.write_bytes(data)
            os.utime(tmp, (expires, expires))

        atomic.write_file(path, fill, mode=0o600)

    def get(self, name: str) -> Path | None:
        """The stored file called ``name``, or None (no such name, or expired)."""
        if not valid_name(name) or self._root is None:
            return None
        self.sweep()
        path = self._root / name
        return path if path.is_file() and not path.is_symlink() else None

    def _own_files(self) -> list[Path]:
        """The files this store wrote (and the temporary ones of a write cut short)."""
        if self._root is None or not self._root.is_dir():
            return []
        return [p for p in self._root.iterdir() if valid_name(p.name) or _PARTIAL.fullmatch(p.name)]

    @staticmethod
    def download_name(name: str) -> str:
        """The file name a download is offered under: the upload's (made safe)."""
        return name.split(".", 1)[1]

    def sweep(self) -> int:
        """Remove the files past their expiry (and old leftovers of writes cut short);
        how many were removed."""
        now = time.time()
        removed = 0
        with self._lock:
            for path in self._own_files():
                partial = not valid_name(path.name)
                try:
                    mtime = path.lstat().st_mtime
                    if mtime <= (now - _PARTIAL_AGE if partial else now):
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    pass
        return removed

    def close(self) -> None:
        """Remove the directory if this store made it as a temporary one; else only the
        expired files (the rest wait for the next process)."""
        if self.owned and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        else:
            self.sweep()
