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
    clean = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_") or "document"
    ext = re.sub(r"[^A-Za-z0-9]+", "", suffix)[:10].lower()
    return (clean[: 99 - len(ext)] + ("." + ext if ext else ""))[:100]


class FileStore:
    """Translated files under random names in ``root`` (a new temporary directory when
    None), each removed ``ttl`` seconds after it was written."""

    def __init__(self, root: Path | None = None, ttl: float = 1800.0) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be > 0 seconds, got {ttl}")
        self.owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="attenzione-files-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl
        self._lock = threading.Lock()

    def put(self, data: bytes, filename: str) -> str:
        """Store ``data``; the name to download it by."""
        self.sweep()
        name = f"{uuid.uuid4().hex}.{safe_name(filename)}"
        atomic.write_bytes(self.root / name, data)
        return name

    def get(self, name: str) -> Path | None:
        """The stored file called ``name``, or None (no such name, or expired)."""
        self.sweep()
        if not NAME.fullmatch(name):
            return None
        path = self.root / name
        return path if path.is_file() else None

    @staticmethod
    def download_name(name: str) -> str:
        """The file name a download is offered under: the upload's (made safe)."""
        return name.split(".", 1)[1]

    def sweep(self) -> int:
        """Remove the files older than ``ttl``; how many were removed."""
        cutoff = time.time() - self.ttl
        removed = 0
        with self._lock:
            for path in self.root.iterdir():
                try:
                    if NAME.fullmatch(path.name) and path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    pass
        return removed

    def close(self) -> None:
        """Remove the directory if this store made it."""
        if self.owned:
            shutil.rmtree(self.root, ignore_errors=True)
