"""API keys and the per-minute request limit.

Keys file (``--api-keys FILE``): one key per line, optionally followed by that key's own
requests-per-minute limit; blank lines and ``#`` comments are ignored::

    3f1c-example-key            # the server's --req-limit applies
    9a77-busy-client  600       # this key may send 600 requests a minute

Keys are never compared with ``==``: the presented key and every stored key are hashed
(SHA-256, so all comparisons have the same length) and compared with
:func:`hmac.compare_digest` against *all* stored keys, without stopping at a match — the
answer takes the same time whichever key matched, or none, so timing says nothing about how
much of a guess was right.

The rate limit is a sliding window of the last 60 seconds per API key (or per client address
without one), as LibreTranslate's ``--req-limit``; over it, 429 ``Slowdown: N per 1 minute``.

Wrong keys are counted too, per client address: after :data:`KEY_ATTEMPTS_PER_MINUTE` wrong
keys in 60 seconds, that address gets 429 for any key — the right one included, or the
answer would tell a guesser when it had found one — until the window has moved on.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

KEY_ATTEMPTS_PER_MINUTE = 10
"""Wrong API keys one client address may send in 60 seconds before it is answered 429."""


@dataclass(frozen=True)
class Key:
    digest: bytes
    req_limit: int | None  # None: the server's default


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class KeyRing:
    """The known API keys (only their digests are kept in memory)."""

    def __init__(self, keys: dict[str, int | None]) -> None:
        self._keys = [Key(_digest(k), limit) for k, limit in keys.items()]

    @classmethod
    def from_file(cls, path: str | Path) -> KeyRing:
        """Read a keys file; a malformed line raises ValueError naming file and line."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"API keys file {path} does not exist")
        keys: dict[str, int | None] = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
                raise ValueError(f"{path}:{n}: expected 'KEY [REQUESTS_PER_MINUTE]'")
            keys[parts[0]] = int(parts[1]) if len(parts) == 2 else None
        if not keys:
            raise ValueError(f"{path} holds no API key")
        return cls(keys)

    def __len__(self) -> int:
        return len(self._keys)

    def lookup(self, presented: str) -> Key | None:
        """The matching key, found in time independent of which key (if any) matched."""
        digest = _digest(presented)
        found: Key | None = None
        for key in self._keys:  # no early exit
            if hmac.compare_digest(digest, key.digest):
                found = key
        return found


class RateLimiter:
    """At most ``limit`` requests per 60 s per identity (sliding window)."""

    WINDOW = 60.0

    def __init__(self) -> None:
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, identity: str, limit: int) -> bool:
        """Count a request of ``identity`` unless it already has ``limit`` in the window."""
        with self._lock:
            hits = self._window(identity)
            if len(hits) >= limit:
                return False
            hits.append(time.monotonic())
            return True

    def full(self, identity: str, limit: int) -> bool:
        """Whether ``identity`` has ``limit`` hits in the window (counts nothing)."""
        with self._lock:
            return len(self._window(identity)) >= limit

    def record(self, identity: str) -> None:
        """Count one hit of ``identity`` (a wrong key, say), whatever its count."""
        with self._lock:
            self._window(identity).append(time.monotonic())

    def _window(self, identity: str) -> deque[float]:
        """``identity``'s hits of the last 60 s (the caller holds the lock)."""
        now = time.monotonic()
        if len(self._hits) > 10_000:  # forget identities that have gone quiet
            for ident in [i for i, d in self._hits.items() if not d or now - d[-1] > self.WINDOW]:
                del self._hits[ident]
        hits = self._hits.setdefault(identity, deque())
        while hits and now - hits[0] >= self.WINDOW:
            hits.popleft()
        return hits
