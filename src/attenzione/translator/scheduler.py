"""When and where batches are decoded: length sorting, chunked streaming, worker processes.

A :class:`Scheduler` turns a list of source id lists into batches of similar length (little
padding), hands them to the :class:`~attenzione.translator.engine.Engine` or, when there is
more than one batch, to :attr:`Scheduler.workers` (:mod:`attenzione.translator.workers`), and
gives the hypotheses back in input order. :meth:`Scheduler.stream` reads an iterable of lines a
chunk at a time, so that output streams, and with workers reads the next chunk before giving a
chunk's translations, so that they never wait at a chunk's end. A request with a user's own
hooks is decoded in this process: a hook need not survive the trip to another.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from attenzione.search.decoding import Hypothesis
from attenzione.translator.engine import Engine

if TYPE_CHECKING:
    from attenzione.translator.request import Request

# A batch's sources' forced target prefixes (None: none), as Engine.decode_batch takes them.
Prefixes = list[tuple[int, ...]] | None

# Decodes batches of source ids elsewhere (attenzione.translator.workers): (batches, request,
# each batch's prefixes) → each batch's hypotheses, in order, as Engine.decode_batch gives them.
BatchRunner = Callable[
    [list[list[list[int]]], "Request", list[Prefixes]], Iterable[list[list[Hypothesis]]]
]

# Lines taken from an iterable at a time by Scheduler.stream: sorted by length inside a chunk
# (little padding), yielded in input order as each chunk finishes (output streams).
STREAM_CHUNK = 512

T = TypeVar("T")


class Scheduler:
    """Batches for ``engine``, decoded here or by :attr:`workers` (None: in this process)."""

    def __init__(self, engine: Engine, workers: BatchRunner | None = None) -> None:
        self.engine, self.workers = engine, workers

    def start(
        self,
        src: Sequence[list[int]],
        request: Request,
        prefixes: Sequence[tuple[int, ...]] | None = None,
    ) -> Callable[[], list[list[Hypothesis]]]:
        """Batch ``src`` (``request.batch_size`` sources a batch; ``prefixes``: each one's
        forced target prefix, None: none) and hand the batches to the workers now (without
        workers, nothing is decoded yet); the call returned collects the hypotheses, in input
        order."""
        size = request.batch_size
        order = sorted(range(len(src)), key=lambda i: len(src[i]))  # little padding
        groups = [order[start : start + size] for start in range(0, len(order), size)]
        groups.reverse()  # the longest first: workers that finish last finish together
        jobs = [[src[i] for i in group] for group in groups]
        forced: list[Prefixes] = [
            None if prefixes is None else [prefixes[i] for i in group] for group in groups
        ]
        decoded: Iterable[list[list[Hypothesis]]]
        if self.workers is not None and len(jobs) > 1 and not request.hooks:
            # the text steps are this process's: a worker decodes ids
            decoded = self.workers(jobs, replace(request, steps=None), forced)
        else:
            decoded = map(self.engine.decode_batch, jobs, [request] * len(jobs), forced)

        def collect() -> list[list[Hypothesis]]:
            results: list[list[Hypothesis]] = [[] for _ in src]
            for group, hyps in zip(groups, decoded, strict=True):
                for i, h in zip(group, hyps, strict=True):
                    results[i] = h
            return results

        return collect

    def stream(
        self,
        texts: Iterable[str],
        begin: Callable[[list[str]], Callable[[], list[T]]],
        chunk: int = STREAM_CHUNK,
    ) -> Iterator[T]:
        """``begin``'s results over ``texts``, ``chunk`` lines at a time, in input order.

        ``begin(lines)`` reads a chunk and starts decoding it; the call it returns collects
        the chunk's results. With :attr:`workers`, the next chunk is begun before a chunk is
        collected, so that they do not wait at a chunk's end; an error in the chunk read
        ahead is raised only after the chunk before is out."""
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        it = iter(texts)
        if self.workers is None:
            while block := list(itertools.islice(it, chunk)):
                yield from begin(block)()
            return
        pending: Callable[[], list[T]] | None = None  # the chunk being decoded
        while True:
            block = list(itertools.islice(it, chunk))
            started: Callable[[], list[T]] | None = None
            error: Exception | None = None
            if block:
                try:
                    started = begin(block)
                except Exception as exc:  # noqa: BLE001 (raised below, after the chunk before)
                    error = exc
            if pending is not None:
                yield from pending()
            if error is not None:
                raise error
            if started is None:
                return
            pending = started
