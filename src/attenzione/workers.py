"""Decoding batches in several processes at once: CTranslate2's ``inter_threads``.

A step of beam search is the network, which keeps both cores busy, and then the search's own
work in Python (the ranking, the word check, the cache's reorder, the constraints): about a
third of the time on the shipped model, on one core, while the other waits. Two processes with
one thread each keep both cores busy: while one ranks, the other multiplies. Threads in one
process cannot do that, since the Python of one holds the interpreter that the other needs
between its operators (docs/benchmarks.md, issue 41).

:class:`Workers` starts its processes (spawned: each loads the model directory afresh) and
decodes a :class:`~attenzione.translator.Translator`'s batches in them, set as its
:attr:`~attenzione.translator.Translator.workers`. The translator makes the same batches as
without them, and each is decoded the same way (:meth:`Translator.decode_batch`); only the
thread count differs, which on the CPUs measured did not change a single translation of FLORES
dev (the packed kernels split a product's rows between threads, not its sums).

A worker knows what its model directory says and the shortlist switch it is given: a word
list set on the translator after loading is not seen by the workers.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import TracebackType

import torch

from attenzione.config import DecodeConfig
from attenzione.decoding import Hypothesis
from attenzione.scoring import Terms
from attenzione.translator import Translator

# the translator each worker process decodes with (set by _start, in the worker)
_translator: Translator | None = None


def _start(directory: str, threads: int, precision: str, pack: bool, shortlist: bool) -> None:
    """A worker process's start: its thread count, then the model."""
    global _translator
    torch.set_num_threads(threads)
    _translator = Translator.from_pretrained(directory, precision=precision, pack=pack)
    _translator.use_shortlist = shortlist and _translator.shortlist is not None


def _ready() -> None:
    """Nothing: a task that makes the pool start its processes."""


def _decode(job: list[list[int]], search: DecodeConfig, terms: Terms) -> list[list[Hypothesis]]:
    assert _translator is not None, "a worker decodes only after _start"
    return _translator.decode_batch(job, search, terms)


class Workers:
    """``workers`` processes, each decoding with the model in ``directory`` on ``threads``
    threads (``precision``, ``pack`` and ``shortlist`` as the translator was loaded and set).
    Call it with batches of source ids; use it as a context manager, or :meth:`close` it."""

    def __init__(
        self,
        directory: str | Path,
        workers: int = 2,
        *,
        threads: int = 1,
        precision: str = "fp32",
        pack: bool = True,
        shortlist: bool = True,
    ) -> None:
        if workers < 1 or threads < 1:
            raise ValueError(f"workers and threads must be >= 1, got {workers} and {threads}")
        self.workers, self.threads = workers, threads
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),  # a fresh interpreter: no forked
            initializer=_start,  # thread pools
            initargs=(str(directory), threads, precision, pack, shortlist),
        )
        # the first task starts every process, each loading the model: now, while the
        # caller does its own loading, rather than at the first batch
        self._pool.submit(_ready)

    def __call__(
        self, jobs: list[list[list[int]]], search: DecodeConfig, terms: Terms
    ) -> Iterator[list[list[Hypothesis]]]:
        """Each batch's hypotheses, in order, as they come: each worker takes the next batch
        when it is done with one."""
        return self._pool.map(_decode, jobs, itertools.repeat(search), itertools.repeat(terms))

    def close(self) -> None:
        """Stop the processes (after the batches given to them)."""
        self._pool.shutdown()

    def __enter__(self) -> Workers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
