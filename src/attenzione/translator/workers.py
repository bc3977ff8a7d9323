"""Decoding batches in several processes at once: CTranslate2's ``inter_threads``.

A step of beam search is the network, which keeps both cores busy, and then the search's own
work in Python (the ranking, the word check, the cache's reorder, the constraints): about a
third of the time on the shipped model, on one core, while the other waits. Two processes with
one thread each keep both cores busy: while one ranks, the other multiplies. Threads in one
process cannot do that, since the Python of one holds the interpreter that the other needs
between its operators (docs/benchmarks.md, issue 41).

:class:`Workers` starts its processes (spawned: each loads the model directory afresh) and
decodes a :class:`~attenzione.translator.translator.Translator`'s batches in them, given to it
as ``workers`` when it is made. The translator makes the same
batches as without them, and each is decoded the same way
(:meth:`~attenzione.translator.engine.Engine.decode_batch`, the one object a worker runs); only
the thread count differs. On the CPU measured that did not change a single translation of FLORES
dev (the packed kernels split a product's rows between threads, not its sums); another CPU's
kernels might.

A worker knows what its model directory says, loaded with the precision and shortlist switch
it is given (:meth:`Workers.of` takes them from a translator): a word list given to the
translator in place of its directory's is not seen by the workers, nor is a user's own hook
(a request with hooks is decoded in the translator's process).

Ctrl-C is the parent's alone. A terminal sends SIGINT to every process of its foreground group,
workers included: each used to raise ``KeyboardInterrupt`` wherever it was (a 110-line
traceback from inside ``import torch`` while starting), and the parent, leaving the pool, waited
for the batches already handed out (7.6 s inside a chunk). Now the workers ignore SIGINT from
their first instruction (the parent ignores it while it starts them, and a process inherits
that), and a pool left by an exception (:meth:`Workers.__exit__`) terminates its processes and
drops their batches instead of waiting for them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import torch

from attenzione.search.decoding import Hypothesis
from attenzione.translator.request import Request
from attenzione.translator.scheduler import Prefixes
from attenzione.translator.translator import Translator

# in a worker process: the translator it decodes with, or why it could not load one
_translator: Translator | None = None
_failed: Exception | None = None
_barrier: Any = None  # all workers meet here in Workers.wait


def _start(
    directory: str, threads: int, precision: str, pack: bool, shortlist: bool, barrier: Any
) -> None:
    """A worker process's start: its thread count, then the model. A failure is kept and
    raised at the first batch, where it reaches the caller as the error it is."""
    global _translator, _failed, _barrier
    # Ctrl-C is the parent's to handle (it terminates the pool): inherited already when the
    # pool was made in the main thread, set here for a pool made in another
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _barrier = barrier
    torch.set_num_threads(threads)
    try:
        _translator = Translator.from_pretrained(
            directory, precision=precision, pack=pack, shortlist=shortlist
        )
    except Exception as exc:  # noqa: BLE001 (any failure to load goes back to the caller)
        _failed = exc


def _ready() -> None:
    """Nothing: a task that makes the pool start one more process."""


def _meet() -> None:
    """Wait until every worker has loaded and come here (each takes one such task)."""
    _barrier.wait()
    if _failed is not None:
        raise _failed


def _decode(job: list[list[int]], request: Request, prefixes: Prefixes) -> list[list[Hypothesis]]:
    if _failed is not None:
        raise _failed
    assert _translator is not None, "a worker decodes only after _start"
    return _translator.engine.decode_batch(job, request, prefixes)


class WorkerStopped(RuntimeError):
    """A worker process died (killed, out of memory): its batches are lost."""


class Workers:
    """``workers`` processes, each decoding with the model in ``directory`` on ``threads``
    threads (``precision``, ``pack`` and ``shortlist`` as the translator was loaded and set).
    They start at once and load the model while the caller goes on. Call it with batches of
    source ids; use it as a context manager, or :meth:`close` it."""

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
        context = multiprocessing.get_context("spawn")  # a fresh interpreter each: no forked
        self._pool = ProcessPoolExecutor(  # thread pools
            max_workers=workers,
            mp_context=context,
            initializer=_start,
            initargs=(
                str(directory),
                threads,
                precision,
                pack,
                shortlist,
                context.Barrier(workers),
            ),
        )
        with _sigint_ignored():  # the processes inherit it: no KeyboardInterrupt while they start
            for _ in range(workers):  # a process starts for each task no idle process takes
                self._pool.submit(_ready)

    @classmethod
    def of(cls, translator: Translator, workers: int = 2, *, threads: int = 1) -> Workers:
        """Workers loading ``translator``'s model directory as it was loaded (precision,
        packing, the shortlist switch). A translator built from objects has no directory."""
        if translator.directory is None:
            raise ValueError("workers load a model directory: this translator was not loaded")
        return cls(
            translator.directory,
            workers,
            threads=threads,
            precision=translator.precision,
            pack=translator.packed,
            shortlist=translator.use_shortlist,
        )

    def wait(self) -> None:
        """Return once every worker has loaded its model (raising what stopped one)."""
        for done in [self._pool.submit(_meet) for _ in range(self.workers)]:
            self._result(done.result)

    def __call__(
        self, jobs: list[list[list[int]]], request: Request, prefixes: list[Prefixes]
    ) -> Iterator[list[list[Hypothesis]]]:
        """Each batch's hypotheses, in order, as they come. The batches are handed out now
        (each worker takes the next when it is done with one); the results are read as the
        caller goes.

        Submitted one by one, not with ``ProcessPoolExecutor.map``: map cancels the batches
        left when its iterator is dropped (as Ctrl-C unwinds), and Python 3.11's pool, broken
        by :meth:`close` terminating its processes, then fails on a cancelled batch with a
        traceback from its own thread (fixed in 3.12). Nothing here cancels a batch."""
        futures = self._result(
            lambda: [
                self._pool.submit(_decode, job, request, forced)
                for job, forced in zip(jobs, prefixes, strict=True)
            ]
        )
        return self._each(futures)

    def _each(
        self, futures: list[Future[list[list[Hypothesis]]]]
    ) -> Iterator[list[list[Hypothesis]]]:
        for future in futures:
            yield self._result(future.result)

    @staticmethod
    def _result(get: Any) -> Any:
        try:
            return get()
        except BrokenExecutor:
            raise WorkerStopped(
                "a worker process stopped (out of memory?): try --workers 1"
            ) from None

    def close(self, *, cancel: bool = False) -> None:
        """Stop the processes after the batches given to them, or with ``cancel`` at once:
        the batches given are dropped and the processes terminated."""
        if not cancel:
            self._pool.shutdown()
            return
        # Terminated, the processes leave the pool broken, and its thread fails what is pending
        # instead of waiting for it (ProcessPoolExecutor.terminate_workers, Python 3.14). Not
        # cancel_futures: see __call__
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(5)
            if process.is_alive():  # SIGTERM not taken yet (stopped in the kernel?): no waiting
                process.kill()
                process.join()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> Workers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # left by an exception (Ctrl-C, an error in a batch): nobody waits for the batches
        self.close(cancel=exc is not None)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the block runs (in the main thread, the only one that may set a
    handler; elsewhere the block runs as it is). A process started meanwhile inherits it, and
    Python leaves an ignored SIGINT ignored: it raises no ``KeyboardInterrupt`` from its first
    instruction. A Ctrl-C in the milliseconds the block takes is lost."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:  # None: a handler set outside Python, which cannot be set back
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
