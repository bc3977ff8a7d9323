"""The service's models, loaded when first asked for and unloaded least-recently-used.

A server for many languages knows many models (a dozen OPUS-MT models of ~300 MB each would
fill a small machine) but needs few at once. :class:`ModelPool` is the batcher's mapping of
route keys (``"en-it"``) to routes: every key is known from the start, a route is built the
first time it is looked up, and past ``max_models`` loaded (or ``max_bytes`` of weights) the
one used longest ago is dropped.

Looking a route up may take seconds (a model from disk): the service does it in a thread
(``asyncio.to_thread``), never in the event loop, and two requests for a model being loaded
wait for the same load — there is one lock per key. A route dropped while one of its batches
runs stays alive until that batch is done (the worker holds it); a queued sentence of a
dropped model loads it again when its turn comes. So a bound too small for the traffic costs
time, never a wrong or a failed answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from attenzione.serve.batcher import Route


@dataclass(frozen=True)
class Loader:
    """How to build one route, and what it weighs (bytes of weights: the memory budget's
    measure, read from the files before anything is loaded)."""

    load: Callable[[], Route]
    size: int = 0


class ModelPool(Mapping[str, Route]):
    """Routes by key, built on first use; at most ``max_models`` (None: any number) and
    ``max_bytes`` of weights (None: no budget) kept, the least recently used dropped first.
    The route just asked for is always kept, even alone over the budget."""

    def __init__(
        self,
        loaders: Mapping[str, Loader],
        *,
        max_models: int | None = None,
        max_bytes: int | None = None,
    ) -> None:
        if not loaders:
            raise ValueError("a server needs at least one model")
        if max_models is not None and max_models < 1:
            raise ValueError(f"max_models must be >= 1, got {max_models}")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.loaders = dict(loaders)
        self.max_models = max_models
        self.max_bytes = max_bytes
        self._loaded: OrderedDict[str, Route] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._key_locks = {key: threading.Lock() for key in self.loaders}
        self.loads = 0  # how many times a model was loaded (a reload counts again)
        self.unloads = 0

    # the Mapping: every key is known; looking one up loads it
    def __iter__(self) -> Iterator[str]:
        return iter(self.loaders)

    def __len__(self) -> int:
        return len(self.loaders)

    def __contains__(self, key: object) -> bool:
        return key in self.loaders

    def __getitem__(self, key: str) -> Route:
        if key not in self.loaders:
            raise KeyError(key)
        with self._lock:
            route = self._loaded.get(key)
            if route is not None:
                self._loaded.move_to_end(key)
                return route
        with self._key_locks[key]:  # one load a key: the others wait for it
            with self._lock:
                route = self._loaded.get(key)
                if route is not None:
                    self._loaded.move_to_end(key)
                    return route
            route = self.loaders[key].load()  # outside the pool's lock: others go on
            with self._lock:
                self._loaded[key] = route
                self.loads += 1
                self._shrink(keep=key)
            return route

    def _shrink(self, keep: str) -> None:
        """Drop the least recently used routes past the bounds (under the lock)."""

        def over() -> bool:
            many = self.max_models is not None and len(self._loaded) > self.max_models
            heavy = self.max_bytes is not None and self._bytes() > self.max_bytes
            return many or heavy

        while over() and len(self._loaded) > 1:
            oldest = next(k for k in self._loaded if k != keep)
            del self._loaded[oldest]
            self.unloads += 1

    def _bytes(self) -> int:
        return sum(self.loaders[k].size for k in self._loaded)

    def peek(self, key: str) -> Route | None:
        """The route when it is loaded, without loading it or counting a use."""
        with self._lock:
            return self._loaded.get(key)

    def loaded(self) -> list[str]:
        """The keys loaded now, least recently used first."""
        with self._lock:
            return list(self._loaded)

    def snapshot(self) -> dict[str, object]:
        """What ``/health`` says of the models."""
        with self._lock:
            return {
                "loaded": list(self._loaded),
                "known": list(self.loaders),
                "max_models": self.max_models,
                "max_bytes": self.max_bytes,
                "loaded_bytes": self._bytes(),
                "loads": self.loads,
                "unloads": self.unloads,
            }
