"""The download area of ``/translate_file``: translated documents, kept for a while.

LibreTranslate's file flow is two requests: ``POST /translate_file`` (multipart ``file``,
``source``, ``target``) answers ``{"translatedFileUrl": ".../download_file/NAME"}``, and a
``GET`` of that address gives the translated file. The upload itself is never written to
disk: :mod:`attenzione.documents` reads it from memory. Only the translation is stored, in
one directory of its own, under a name made of 128 random bits and the upload's file name
reduced to safe characters — the name is the only key to it, and nothing outside the
directory can be named. Files older than ``ttl`` seconds are removed (checked at every
upload and download, and the whole directory when the server stops, if it made it).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path, PurePosixPath, PureWindowsPath

from attenzione import atomic

# what /download_file/ accepts: 32 hex digits, a dot, a safe file name
NAME = re.compile(r"[0-9a-f]{32}\.[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# the temporary sibling of a write (attenzione.atomic) that a crash left behind
_PARTIAL = re.compile(r"\.[0-9a-f]{32}\..+\.tmp")

MEDIA_TYPES = {
    ".txt": "text/plain; charset=utf-8",
    ".srt": "application/x-subrip",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".odt": "application/vnd.oasis.opendocument.text",
}


def safe_name(filename: str) -> str:
    """The last part of an uploaded file's name, in ``[A-Za-z0-9._-]`` only (at most 100
    characters, its suffix kept): ``"../../etc/my report.docx"`` → ``"my_report.docx"``."""
    base = PureWindowsPath(PurePosixPath(filename).name).name
    stem, dot, suffix = base.rpartition(".")
    if not dot:
        stem, suffix = base, ""
    clean = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_-") or "document"
    ext = re.sub(r"[^A-Za-z0-9]+", "", suffix)[:10].lower()
    return (clean[: 99 - len(ext)] + ("." + ext if ext else ""))[:100]


class StoreFull(Exception):
    """The download area holds its most bytes already."""


class FileStore:
    """Translated files under random names in ``root`` (a new temporary directory, made at
    the first file, when None), each removed ``ttl`` seconds after it was written; at most
    ``max_bytes`` in all."""

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
        """The directory (made now if this store makes its own)."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="attenzione-files-"))
            elif not self._made:
                self._root.mkdir(parents=True, exist_ok=True)
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
        atomic.write_bytes(self.root / name, data)
        return name

    def get(self, name: str) -> Path | None:
        """The stored file called ``name``, or None (no such name, or expired)."""
        if not NAME.fullmatch(name) or self._root is None:
            return None
        self.sweep()
        path = self._root / name
        return path if path.is_file() else None

    def _own_files(self) -> list[Path]:
        """The files this store wrote (and the temporary ones of a write cut short)."""
        if self._root is None or not self._root.is_dir():
            return []
        return [
            p for p in self._root.iterdir() if NAME.fullmatch(p.name) or _PARTIAL.fullmatch(p.name)
        ]

    @staticmethod
    def download_name(name: str) -> str:
        """The file name a download is offered under: the upload's (made safe)."""
        return name.split(".", 1)[1]

    def sweep(self) -> int:
        """Remove the files older than ``ttl``; how many were removed."""
        cutoff = time.time() - self.ttl
        removed = 0
        with self._lock:
            for path in self._own_files():
                try:
                    if path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    pass
        return removed

    def close(self) -> None:
        """Remove the directory if this store made it."""
        if self.owned and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
