"""One inference worker, fed by a bounded queue, that batches sentences across requests.

Why one worker: the model is loaded once and torch already spreads one batch over every core
(``torch.set_num_threads``); two workers would fight over the same cores and each pay the
per-step overhead of a small batch. Decoding cost is dominated by the decoder's per-step
work, which a batch of 32 sentences pays barely more than a batch of one — so the worker's
job is to make batches as large as the waiting requests allow:

* every HTTP request cuts its text into sentences and submits them all at once (all or none:
  a request is never half-admitted);
* the worker takes the oldest waiting sentence, then every other waiting sentence decoded the
  same way (same beam and number of alternatives), oldest first, up to ``max_sentences`` and a
  budget of ``max_tokens`` padded source tokens;
* before it starts a batch it may wait for company, at most ``max_wait`` seconds — but only
  while fewer sentences are waiting than the load it last saw (the previous batch plus what
  queued up while it ran). Under load, the clients of a finished batch all get their answers
  at once and send their next requests a few milliseconds later; without the wait the
  clients split into two waves that alternate, each half the size, and a batch of 16 decodes
  about a third slower per sentence than one of 32. A lone client never waits (the load it
  last saw is its own one sentence), so its latency is the direct call's plus HTTP;
* the :class:`~attenzione.translator.translator.Translator` sorts a batch by length, decodes it,
  and each sentence's future is resolved — the HTTP layer awaits those futures without blocking.

The queue is bounded in sentences: a request that does not fit raises :class:`QueueFull`
(the service answers 503 at once; waiting would only move the overload into the clients'
timeouts). A request with more sentences than the whole queue holds is admitted when the queue
is empty, so a long text within the character limit is never refused for good.
:meth:`Batcher.stop` lets the worker finish everything already admitted.

A sentence whose future is cancelled before the worker starts it (its client hung up, its
document ran out of time) is dropped unread: it neither takes a place in a batch nor holds
the queue full, and ``/health`` counts it (``cancelled_sentences``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attenzione.config import search_config

if TYPE_CHECKING:
    from attenzione.pipeline import Pipeline
    from attenzione.search.registry import Terms
    from attenzione.translator.request import Request
    from attenzione.translator.translator import Candidate, Translator
    from attenzione.viz.maps import AttentionMaps


class QueueFull(Exception):
    """The queue cannot take a request's sentences now (the service answers 503)."""


class Stopped(Exception):
    """The worker is shutting down and accepts no new work."""


@dataclass(frozen=True)
class Decoding:
    """How a sentence is decoded; only sentences with equal settings share a batch."""

    beam: int = 4
    n_best: int = 1
    prefix: str = ""  # what the translation begins with (""; none)


@dataclass
class SentenceResult:
    """What the worker gives back for one sentence."""

    candidates: tuple[Candidate, ...]
    maps: AttentionMaps | None = None
    # through another language: the models' keys, in order, and the first leg's result
    models: tuple[str, ...] = ()
    first: SentenceResult | None = None


@dataclass(frozen=True)
class Route:
    """One loaded model and how the worker translates with it: the text pipeline and ranking
    terms (None: the model's own) and the corpus tag (None: the model's default)."""

    translator: Translator
    steps: Pipeline | None = None
    terms: Terms | None = None
    tag: str | None = None


@dataclass
class _Job:
    text: str
    n_tokens: int
    decoding: Decoding
    attention: bool
    future: Future[SentenceResult]
    model: str = ""
    enqueued: float = field(default_factory=time.monotonic)
    # a job of its own (a trace): what the worker calls with the route, alone in its batch
    work: Callable[[Route], Any] | None = None


@dataclass
class Stats:
    """Counters a client can read (``GET /health``) to see that batching happens."""

    batches: int = 0
    sentences: int = 0
    max_batch: int = 0
    rejected_requests: int = 0
    failed_batches: int = 0
    busy_seconds: float = 0.0
    cancelled_sentences: int = 0  # dropped unread: their request gave up before they ran
    cancelled_requests: int = 0  # requests whose client hung up before the answer

    def as_dict(self, queued: int, running: int) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "sentences": self.sentences,
            "max_batch_sentences": self.max_batch,
            "mean_batch_sentences": round(self.sentences / self.batches, 2)
            if self.batches
            else 0.0,
            "queued_sentences": queued,
            "running_sentences": running,
            "rejected_requests": self.rejected_requests,
            "failed_batches": self.failed_batches,
            "cancelled_sentences": self.cancelled_sentences,
            "cancelled_requests": self.cancelled_requests,
            "busy_seconds": round(self.busy_seconds, 3),
        }


class Batcher:
    """The bounded queue and its single worker thread around one or several models.

    Given several (``{"en-it": Route(...), "it-en": Route(...)}``), each sentence names its
    model and a batch holds sentences of one model only; the one worker keeps the cores for
    whichever model has the oldest waiting sentence (two workers would fight over them).
    """

    def __init__(
        self,
        translator: Translator | Mapping[str, Route],
        *,
        max_queue: int = 512,
        max_sentences: int = 64,
        max_tokens: int = 4096,
        max_wait: float = 0.030,
        length_penalty: float = 1.0,
        steps: Pipeline | None = None,
        terms: Terms | None = None,
        tag: str | None = None,
    ) -> None:
        if max_queue < 1 or max_sentences < 1 or max_tokens < 1 or max_wait < 0:
            raise ValueError(
                f"queue size ({max_queue}), batch sentences ({max_sentences}) and batch "
                f"tokens ({max_tokens}) must be >= 1 and the wait ({max_wait}) >= 0"
            )
        if isinstance(translator, Mapping):
            if not translator:
                raise ValueError("a batcher needs at least one model")
            # a dict is copied; another mapping (serve/pool's, which loads a model when it is
            # first looked up) is kept as it is: copying it would load every model
            self.routes = dict(translator) if isinstance(translator, dict) else translator
        else:
            self.routes = {"": Route(translator, steps, terms, tag)}
        self.default = next(iter(self.routes))
        self.translator = self.routes[self.default].translator  # the first model
        self.max_queue = max_queue
        self.max_sentences = max_sentences
        self.max_tokens = max_tokens
        self.max_wait = max_wait
        self.length_penalty = length_penalty
        self.stats = Stats()
        self._queue: deque[_Job] = deque()
        self._running = 0
        self._expect = 1  # the load last seen: previous batch + what queued while it ran
        self._free_since = time.monotonic()  # when the worker last finished a batch
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="attenzione-worker", daemon=True)
        self.in_caller = False  # True: start() does nothing, the owner calls run() itself

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        """Run the worker in its own thread (unless :meth:`run` drives it in the caller's)."""
        if not self.in_caller:
            self._thread.start()

    def run(self) -> None:
        """Run the worker in the calling thread until :meth:`stop` (and the queue is empty).

        ``attenzione serve`` drives the worker from the main thread and serves HTTP from a
        second one: torch decodes a single sentence 20–30% slower from a thread that is not
        the process's first (measured here: 60–68 ms against 78–88 ms, beam 4, 2 threads).
        """
        self._loop()

    def stop(self, timeout: float | None = None) -> None:
        """Accept nothing new, finish what was admitted, then end the worker."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def snapshot(self) -> dict[str, Any]:
        with self._cond:
            return self.stats.as_dict(len(self._queue), self._running)

    # ------------------------------------------------------------------ submitting
    def submit(
        self,
        texts: list[str],
        decoding: Decoding,
        attention: bool = False,
        model: str | None = None,
    ) -> list[Future[SentenceResult]]:
        """Queue every sentence of one request, or none of them (:class:`QueueFull`), for
        ``model`` (a key of the routes; None: the first)."""
        key = self.default if model is None else model
        if key not in self.routes:
            raise KeyError(f"no model {key!r} in this batcher")
        encode = self.routes[key].translator.encode_source
        jobs = [_Job(t, len(encode(t)), decoding, attention, Future(), key) for t in texts]
        with self._cond:
            if self._stopping:
                raise Stopped("the server is shutting down")
            if self._queue and len(self._queue) + len(jobs) > self.max_queue:
                self._drop_cancelled()  # what nobody waits for any more holds no place
            # A request larger than the whole queue (a long text within the character limit)
            # is admitted when nothing waits: refusing it would mean refusing it forever.
            if self._queue and len(self._queue) + len(jobs) > self.max_queue:
                self.stats.rejected_requests += 1
                wait = "" if len(jobs) <= self.max_queue else ", it runs once the queue is empty"
                raise QueueFull(
                    f"the translation queue is full ({len(self._queue)} of {self.max_queue} "
                    f"sentences waiting, this request has {len(jobs)}{wait}); retry shortly"
                )
            self._queue.extend(jobs)
            self._cond.notify_all()
        return [j.future for j in jobs]

    def call(self, work: Callable[[Route], Any], model: str | None = None) -> Future[Any]:
        """Queue ``work(route)`` for ``model``'s route (None: the first), run by the worker
        alone in its batch — so that it has the model to itself (a trace switches parts of
        it off while it runs) and the cores to itself, as a batch has."""
        key = self.default if model is None else model
        if key not in self.routes:
            raise KeyError(f"no model {key!r} in this batcher")
        job = _Job("", 0, Decoding(beam=0, n_best=0), False, Future(), key, work=work)
        with self._cond:
            if self._stopping:
                raise Stopped("the server is shutting down")
            if self._queue and len(self._queue) + 1 > self.max_queue:
                self._drop_cancelled()
            if self._queue and len(self._queue) + 1 > self.max_queue:
                self.stats.rejected_requests += 1
                raise QueueFull(
                    f"the translation queue is full ({len(self._queue)} of {self.max_queue} "
                    "sentences waiting); retry shortly"
                )
            self._queue.append(job)
            self._cond.notify_all()
        return job.future

    # ------------------------------------------------------------------ the worker
    def request_cancelled(self) -> None:
        """Count a request whose client hung up (its sentences are dropped as they come up,
        or were never queued)."""
        with self._cond:
            self.stats.cancelled_requests += 1

    def _drop_cancelled(self) -> None:
        """Take the jobs whose futures were cancelled out of the queue (under the lock)."""
        kept = deque(j for j in self._queue if not j.future.cancelled())
        self.stats.cancelled_sentences += len(self._queue) - len(kept)
        self._queue = kept

    def _budget_reached(self) -> bool:
        """True when the waiting sentences already fill a batch (no point in waiting)."""
        return len(self._queue) >= self.max_sentences or (
            sum(j.n_tokens for j in self._queue) >= self.max_tokens
        )

    def _take(self) -> list[_Job]:
        """The oldest job and its compatible successors, within the batch budget (none when
        every waiting job was cancelled)."""
        self._drop_cancelled()
        if not self._queue:
            return []
        if self._queue[0].work is not None:  # a call runs alone
            return [self._queue.popleft()]
        decoding, model = self._queue[0].decoding, self._queue[0].model
        taken: list[_Job] = []
        kept: deque[_Job] = deque()
        longest = 0
        while self._queue:
            job = self._queue.popleft()
            width = max(longest, job.n_tokens)
            fits = len(taken) < self.max_sentences and width * (len(taken) + 1) <= self.max_tokens
            same = job.decoding == decoding and job.model == model and job.work is None
            if same and (fits or not taken):
                taken.append(job)
                longest = width
            else:
                kept.append(job)
        self._queue = kept
        return taken

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return  # stopping, and nothing left to do
                deadline = max(self._queue[0].enqueued, self._free_since) + self.max_wait
                expect = min(self._expect, self.max_sentences)
                while (
                    len(self._queue) < expect and not self._budget_reached() and not self._stopping
                ):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = self._take()
                if not batch:  # all it found was cancelled
                    continue
                self._running = len(batch)
            self._run(batch)
            with self._cond:
                self._running = 0
                self._expect = len(batch) + len(self._queue)
                self._free_since = time.monotonic()

    def request(self, model: str, decoding: Decoding, *, batch_size: int = 1) -> Request:
        """The request sentences of ``model`` (a route's key) decoded as ``decoding`` are
        translated with: the route's steps, weights and tag, checked against what the machine
        can search (:meth:`Translator.request`, a ValueError for a beam too wide). The service
        makes it before it queues a request, the worker for each batch."""
        route = self.routes[model]
        search = search_config(decoding.beam, decoding.n_best, length_penalty=self.length_penalty)
        return route.translator.request(
            search=search,
            terms=route.terms,
            steps=route.steps,
            tag=route.tag,
            prefix=decoding.prefix,
            batch_size=batch_size,
        )

    def _run(self, batch: list[_Job]) -> None:
        """Decode one batch and resolve its futures (with the error, if decoding failed).

        A job whose future was cancelled while it waited (its request gave up: a document
        past its time) is dropped here; the others are marked running, so that a late cancel
        cannot make resolving them fail."""
        running = [j for j in batch if j.future.set_running_or_notify_cancel()]
        if len(running) < len(batch):
            with self._cond:
                self.stats.cancelled_sentences += len(batch) - len(running)
        batch = running
        if not batch:
            return
        started = time.monotonic()
        decoding = batch[0].decoding
        route = self.routes[batch[0].model]
        work = batch[0].work
        if work is not None:
            try:
                batch[0].future.set_result(work(route))
            except Exception as exc:  # the caller's to report (a 400 or a 500)
                batch[0].future.set_exception(exc)
            finally:
                with self._cond:
                    self.stats.busy_seconds += time.monotonic() - started
            return
        try:
            request = self.request(batch[0].model, decoding, batch_size=len(batch))
            results = route.translator.translate([j.text for j in batch], request)
            out = []
            for job, result in zip(batch, results, strict=True):
                maps = None
                cands = result.candidates
                best = cands[0]
                if job.attention and best.ids and best.pieces == 1:
                    # what the model read: without carried pictographs, in sentence case
                    maps = route.translator.attention(best.read, tgt_ids=best.ids, tag=route.tag)
                out.append(SentenceResult(cands, maps))
        except Exception as exc:  # reported to the waiting requests as a 500
            self.stats.failed_batches += 1
            for job in batch:
                job.future.set_exception(exc)
            return
        finally:
            with self._cond:
                self.stats.busy_seconds += time.monotonic() - started
        with self._cond:
            self.stats.batches += 1
            self.stats.sentences += len(batch)
            self.stats.max_batch = max(self.stats.max_batch, len(batch))
        for job, done in zip(batch, out, strict=True):
            job.future.set_result(done)
