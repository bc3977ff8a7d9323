"""What each endpoint does, apart from HTTP: checks, the worker, and the answers' shapes.

:class:`Service` owns the one :class:`~attenzione.translator.translator.Translator` (through the
:class:`~attenzione.serve.batcher.Batcher`, the only code that calls it), the language
identifier, the keys and the limits. Its methods take the fields :mod:`.fields` read and
return JSON-able values, raising :class:`~attenzione.serve.fields.ApiError` for anything
the client must fix — in LibreTranslate's order: access (key, rate) first, then the fields.
A search wider than the model's machine can hold (``alternatives``) is one of those: a 400.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from attenzione.documents import FORMATS, DocumentError, read_document
from attenzione.pipeline.carry import MARKUP_TAG
from attenzione.serve.answer import Wanted, text_answer
from attenzione.serve.batcher import (
    Batcher,
    Decoding,
    QueueFull,
    SentenceResult,
    Stopped,
)
from attenzione.serve.fields import ApiError, Repeated, get_bool, get_int, get_q, get_str
from attenzione.serve.files import FileStore, StoreFull
from attenzione.serve.language import Languages, language_name
from attenzione.serve.limits import KEY_ATTEMPTS_PER_MINUTE, KeyRing, RateLimiter
from attenzione.serve.pool import ModelPool
from attenzione.serve.routing import legs, read_sources
from attenzione.serve.text import Piece, plan_html, plan_text
from attenzione.serve.views import Views, over_limit


@dataclass(frozen=True)
class Settings:
    """The operator's choices (``attenzione serve`` options); -1 means unlimited."""

    char_limit: int = 5000
    batch_limit: int = 100
    req_limit: int = -1
    alternatives_limit: int = 8
    beam: int = 4
    max_body: int = 2 * 1024 * 1024
    frontend_timeout: int = 500
    read_timeout: float = 30.0  # seconds a request body may take to arrive (then 408)
    files: bool = True  # /translate_file on (LibreTranslate: --disable-files-translation)
    file_limit: int = 10 * 1024 * 1024  # bytes of one uploaded document
    file_chars: int = 200_000  # characters to translate in one document (-1: no limit)
    file_timeout: float = 600.0  # seconds one document may take to translate (then 503)


def _sentences_of(
    plans: list[list[Piece]], routes: list[str | None], route: str
) -> tuple[list[int], list[str]]:
    """The texts (their indices) that go to ``route``, and their sentences, in order."""
    mine = [i for i, r in enumerate(routes) if r == route]
    return mine, [p.text for i in mine for p in plans[i] if p.sentence]


def _spread(plans: list[list[Piece]], mine: list[int], items: list[Any], into: list[Any]) -> None:
    """Give each text of ``mine`` its run of ``items``, one a sentence of its plan."""
    at = 0
    for i in mine:
        n = sum(p.sentence for p in plans[i])
        into[i], at = items[at : at + n], at + n


class Service(Views):
    """LibreTranslate's API over the batcher (and, from :class:`Views`, our own views)."""

    settings: Settings

    def __init__(
        self,
        batcher: Batcher,
        languages: Languages,
        settings: Settings,
        keys: KeyRing | None = None,
        files: FileStore | None = None,
    ) -> None:
        self.batcher = batcher
        self.languages = languages
        self.settings = settings
        self.keys = keys
        self.limiter = RateLimiter()
        # where translated documents wait for their download (None: files are off)
        self.files = None if not settings.files else files or FileStore()

    # ------------------------------------------------------------------ access
    def check_access(self, fields: dict[str, Any], client: str) -> None:
        """403 for a wrong key, 400 for a missing one (when keys are on), 429 over the limit
        or after :data:`KEY_ATTEMPTS_PER_MINUTE` wrong keys from ``client`` in a minute."""
        given = fields.get("api_key") or fields.get("apiKey")
        if isinstance(given, Repeated):
            given = given[0]
        if given is not None and not isinstance(given, str):
            raise ApiError(400, "Invalid request: api_key must be a string")
        limit = self.settings.req_limit
        identity = f"ip:{client}"
        if self.keys is not None:
            if not given:
                raise ApiError(400, "Please contact the server operator to get an API key")
            guesses = f"wrong-key:{client}"
            if self.limiter.full(guesses, KEY_ATTEMPTS_PER_MINUTE):
                raise ApiError(
                    429,
                    f"Too many wrong API keys: {KEY_ATTEMPTS_PER_MINUTE} per 1 minute",
                    {"Retry-After": "60"},
                )
            key = self.keys.lookup(given)
            if key is None:
                self.limiter.record(guesses)
                raise ApiError(403, "Invalid API key")
            identity = "key:" + key.digest.hex()
            limit = key.req_limit if key.req_limit is not None else limit
        if limit != -1 and not self.limiter.allow(identity, limit):
            raise ApiError(429, f"Slowdown: {limit} per 1 minute", {"Retry-After": "60"})

    # ------------------------------------------------------------------ /translate
    async def translate(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        self.check_access(fields, client)
        texts, batch = get_q(fields)
        s = self.settings
        n_alt = get_int(fields, "alternatives", 0, loose=True) or 0
        n_alt = max(0, n_alt)
        if over_limit(n_alt, s.alternatives_limit):
            raise ApiError(
                400, f"Invalid request: alternatives parameter must be <= {s.alternatives_limit}"
            )
        if batch and over_limit(len(texts), s.batch_limit):
            raise ApiError(
                400,
                f"Invalid request: request ({len(texts)}) exceeds text limit ({s.batch_limit})",
            )
        for text in texts:
            if over_limit(len(text), s.char_limit):
                raise ApiError(
                    400,
                    f"Invalid request: request ({len(text)}) exceeds text limit ({s.char_limit})",
                )
        source, readings = read_sources(self.languages, self.batcher, fields, texts)
        fmt = (get_str(fields, "format") or "text").strip().lower() or "text"
        if fmt not in ("text", "html"):
            raise ApiError(400, f"{fmt} format is not supported")
        want_attention = get_bool(fields, "attention") or get_bool(fields, "attention_all")
        want = Wanted(
            fmt=fmt,
            alternatives=n_alt,
            scores=get_bool(fields, "scores"),
            attention=want_attention,
            layer=get_int(fields, "attention_layer", None),
            head=get_int(fields, "attention_head", None),
            full=get_bool(fields, "attention_all"),
        )
        # As LibreTranslate, html gets an empty list of alternatives (one candidate each).
        n_best = 1 if fmt == "html" else n_alt + 1
        decoding = Decoding(beam=max(s.beam, n_best), n_best=n_best)
        prefix = get_str(fields, "prefix") or ""
        if prefix.strip() and batch:
            raise ApiError(400, "Invalid request: a prefix is for one text: q is a string")
        routes = {r.route for r in readings if r.route is not None}
        await self._ready(routes or {self.batcher.default})
        for route in routes or {self.batcher.default}:
            for leg in legs(route):
                self._check_attention(leg, want.layer, want.head)
        for route in routes:
            self._check_bounds(route, decoding)

        plans = [
            [Piece(t)]  # already in the target language: kept as it is
            if r.route is None
            else plan_html(t, r.language)
            if fmt == "html"
            else plan_text(t, r.language)
            for t, r in zip(texts, readings, strict=True)
        ]
        if prefix.strip():  # the text's first sentence begins with it
            for route in routes:
                self._check_bounds(route, replace(decoding, prefix=prefix))
        results = await self._decode(
            plans, [r.route for r in readings], decoding, want_attention, prefix
        )
        items = [text_answer(p, r, want) for p, r in zip(plans, results, strict=True)]
        answer: dict[str, Any] = {}
        for key in ["translatedText", "alternatives", "scores", "attention"]:
            if key in items[0]:
                answer[key] = [it[key] for it in items] if batch else items[0][key]
        if source == "auto":  # one detection per text, as LibreTranslate
            found = [r.detected for r in readings]
            answer["detectedLanguage"] = found if batch else found[0]
        return answer

    async def _decode(
        self,
        plans: list[list[Piece]],
        routes: list[str | None],
        decoding: Decoding,
        attention: bool,
        prefix: str = "",
    ) -> list[list[SentenceResult]]:
        """The results of every sentence of every text (a text's own model, ``routes``),
        submitted all at once, one submission per model; a text with no model has none.
        ``prefix``: what the first sentence's translation begins with (one text)."""
        waiting: list[list[Future[SentenceResult]]] = [[] for _ in plans]
        submitted: list[Future[SentenceResult]] = []
        pivoted = [r for r in dict.fromkeys(routes) if r is not None and len(legs(r)) > 1]
        try:
            for route in dict.fromkeys(r for r in routes if r is not None and r not in pivoted):
                mine, sentences = _sentences_of(plans, routes, route)
                if not sentences:
                    continue
                futures = self._submit(sentences, decoding, attention, route, prefix)
                submitted += futures
                _spread(plans, mine, futures, waiting)
        except (QueueFull, Stopped) as exc:
            for f in submitted:
                f.cancel()  # all or none: what a first model admitted is dropped
            headers = {"Retry-After": "1"} if isinstance(exc, QueueFull) else None
            raise ApiError(503, str(exc), headers) from None
        try:
            done = [[await asyncio.wrap_future(f) for f in fs] for fs in waiting]
            for route in pivoted:  # through another language: the two models in turn
                mine, sentences = _sentences_of(plans, routes, route)
                got = await self._two_legs(sentences, decoding, route, attention, prefix)
                _spread(plans, mine, got, done)
            return done
        except asyncio.CancelledError:  # the client hung up: nobody waits for the rest
            for f in submitted:
                f.cancel()
            raise
        except ApiError:
            raise
        except ValueError as exc:  # a search the model refuses (too wide): the client's to fix
            raise ApiError(400, f"Invalid request: {exc}") from None
        except Exception as exc:
            raise ApiError(500, f"Cannot translate text: {exc}") from None

    async def _two_legs(
        self,
        texts: list[str],
        decoding: Decoding,
        route: str,
        attention: bool = False,
        prefix: str = "",
    ) -> list[SentenceResult]:
        """``texts`` through a pivot route's two models in turn (:mod:`attenzione.translator.
        pivot`): the first writes one candidate with no prefix, the second reads its best
        and gives the alternatives; each result says both models and keeps the first leg's
        (its attention among them). Scores are the two legs' together, per token."""
        from attenzione.translator.pivot import joined

        first_key, second_key = legs(route)
        first_decoding = replace(decoding, n_best=1, prefix="")
        firsts = await self._wait(self.batcher.submit(texts, first_decoding, attention, first_key))
        middle = [r.candidates[0].text for r in firsts]
        seconds = await self._wait(self._submit(middle, decoding, attention, second_key, prefix))
        out = []
        for one, two in zip(firsts, seconds, strict=True):
            best = one.candidates[0]
            cands = (
                two.candidates if not best.ids else tuple(joined(best, c) for c in two.candidates)
            )
            out.append(SentenceResult(cands, two.maps, (first_key, second_key), one))
        return out

    def _submit(
        self, sentences: list[str], decoding: Decoding, attention: bool, key: str, prefix: str
    ) -> list[Future[SentenceResult]]:
        """``sentences`` queued for the model ``key``, the first beginning with ``prefix``."""
        if not prefix.strip() or not sentences:
            return self.batcher.submit(sentences, decoding, attention=attention, model=key)
        first = replace(decoding, prefix=prefix)
        futures = self.batcher.submit(sentences[:1], first, attention=attention, model=key)
        if sentences[1:]:
            futures += self.batcher.submit(sentences[1:], decoding, attention=attention, model=key)
        return futures

    async def _wait(self, futures: list[Future[SentenceResult]]) -> list[SentenceResult]:
        """The results of ``futures``, in order; a client who hangs up cancels them all."""
        try:
            return [await asyncio.wrap_future(f) for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    async def _ready(self, routes: Iterable[str]) -> None:
        """Load the models of ``routes`` that are not loaded yet, off the event loop (a model
        from disk takes seconds: other requests go on meanwhile); a request for a model
        being loaded waits for the same load. A model that cannot be loaded is a 500 naming
        it."""
        pool = self.batcher.routes
        if not isinstance(pool, ModelPool):
            return
        for route in routes:
            for key in legs(route):
                if pool.peek(key) is None:
                    try:
                        await asyncio.to_thread(pool.__getitem__, key)
                    except Exception as exc:
                        raise ApiError(500, f"Cannot load the model of {key}: {exc}") from None

    def _check_bounds(self, route: str, decoding: Decoding) -> None:
        """A 400 for a beam or n-best list wider than the model's machine can search, before
        anything is queued: the request is made now as the worker will make it
        (:meth:`Batcher.request`)."""
        keys = legs(route)
        try:
            for key in keys[:-1]:  # a pivot's first model writes one candidate, no prefix
                self.batcher.request(key, replace(decoding, n_best=1, prefix=""))
            self.batcher.request(keys[-1], decoding)
        except ValueError as exc:
            raise ApiError(400, f"Invalid request: {exc}") from None

    def _check_attention(self, route: str, layer: int | None, head: int | None) -> None:
        """Refuse a layer or head the model does not have before any decoding is spent
        (the same ranges :func:`~attenzione.serve.alignment.attention_payload` takes)."""
        config = self.batcher.routes[route].translator.model.config
        n_layers, n_heads = config.n_dec_layers, config.n_heads
        if layer is not None and not -n_layers <= layer < n_layers:
            raise ApiError(
                400, f"Invalid request: attention_layer {layer} is out of range: 0..{n_layers - 1}"
            )
        if head is not None and not 0 <= head < n_heads:
            raise ApiError(
                400, f"Invalid request: attention_head {head} is out of range: 0..{n_heads - 1}"
            )

    # ------------------------------------------------------------------ /translate_file
    async def translate_file(
        self, fields: dict[str, Any], upload: tuple[str, bytes] | None, client: str
    ) -> str:
        """Translate an uploaded document (:mod:`attenzione.documents`) and store the
        result; the name to download it by (``/download_file/NAME``)."""
        s = self.settings
        if self.files is None:
            raise ApiError(403, "Files translation are disabled on this server.")
        self.check_access(fields, client)
        if upload is None:
            raise ApiError(400, "Invalid request: missing file parameter")
        filename, data = upload
        try:  # parsing and writing a document take a while: off the event loop
            doc = await asyncio.to_thread(read_document, data, filename)
        except DocumentError as exc:
            raise ApiError(400, f"Invalid request: {exc}") from None
        chars = sum(len(t) for t in doc.segments)
        if over_limit(chars, s.file_chars):
            raise ApiError(
                400,
                f"Invalid request: the document has {chars} characters to translate, "
                f"more than this server's limit of {s.file_chars}",
            )
        sample = MARKUP_TAG.sub(" ", " ".join(doc.segments)[:4000])
        _, (reading,) = read_sources(self.languages, self.batcher, fields, [sample])
        decoding = Decoding(beam=s.beam, n_best=1)
        route = reading.route
        if route is not None:
            await self._ready([route])
            self._check_bounds(route, decoding)
        # a document already in the target language is written back as it is
        translations: list[str] = [] if route is not None else list(doc.segments)
        todo = doc.segments if route is not None else []
        step = max(1, min(s.batch_limit if s.batch_limit != -1 else 100, 100))
        futures: list[Any] = []
        try:
            async with asyncio.timeout(s.file_timeout):
                # a chunk at a time, so that texts sent meanwhile are not stuck behind it
                for at in range(0, len(todo), step):
                    chunk = todo[at : at + step]
                    if route is not None and len(legs(route)) > 1:  # through another language
                        got = await self._two_legs(chunk, decoding, route)
                        translations += [r.candidates[0].text for r in got]
                        continue
                    futures = self.batcher.submit(chunk, decoding, model=route)
                    for f in futures:
                        translations.append((await asyncio.wrap_future(f)).candidates[0].text)
        except asyncio.CancelledError:  # the client hung up: the rest is never queued
            for f in futures:
                f.cancel()  # and what still waits in the queue is dropped by the worker
            raise
        except TimeoutError:
            for f in futures:
                f.cancel()  # what still waits in the queue is dropped by the worker
            raise ApiError(
                503, f"The document took longer than {s.file_timeout:g} s to translate"
            ) from None
        except QueueFull as exc:
            raise ApiError(503, str(exc), {"Retry-After": "1"}) from None
        except Stopped as exc:
            raise ApiError(503, str(exc)) from None
        except ValueError as exc:  # a search the model refuses: the client's to fix
            raise ApiError(400, f"Invalid request: {exc}") from None
        try:
            out = await asyncio.to_thread(doc.write, translations)
        except (DocumentError, ValueError) as exc:
            raise ApiError(500, f"Cannot write the translated document: {exc}") from None
        try:
            return await asyncio.to_thread(self.files.put, out, filename)
        except StoreFull as exc:
            raise ApiError(503, str(exc), {"Retry-After": "60"}) from None

    # ------------------------------------------------------------------ the rest
    def models(self) -> dict[str, Any]:
        """What ``/health`` says of the models: those loaded now (least recently used
        first), every one the server knows, the bounds, and the pairs reached through
        another language."""
        routes = self.batcher.routes
        if isinstance(routes, ModelPool):
            out: dict[str, Any] = dict(routes.snapshot())
        else:
            out = {"loaded": list(routes), "known": list(routes)}
        out["through"] = {f"{a}-{c}": b for (a, c), b in self.languages.pivots.items()}
        return out

    def detect(self, fields: dict[str, Any], client: str) -> list[Any]:
        """The languages of ``q``, most likely first; for a list, one such list per item."""
        self.check_access(fields, client)
        texts, batch = get_q(fields)
        size = len(" ".join(texts))
        if over_limit(size, self.settings.char_limit):
            raise ApiError(
                400,
                f"Invalid request: request ({size}) exceeds text limit "
                f"({self.settings.char_limit})",
            )
        found = [self.languages.detect(text) for text in texts]
        return found if batch else found[0]

    def frontend_settings(self) -> dict[str, Any]:
        src, tgt = self.languages.source, self.languages.target
        return {
            "charLimit": self.settings.char_limit,
            "frontendTimeout": self.settings.frontend_timeout,
            "apiKeys": self.keys is not None,
            "keyRequired": self.keys is not None,
            "suggestions": False,
            "filesTranslation": self.files is not None,
            "supportedFilesFormat": sorted(FORMATS) if self.files is not None else [],
            "language": {
                "source": {"code": src, "name": language_name(src)},
                "target": {"code": tgt, "name": language_name(tgt)},
            },
        }

    def page_settings(self) -> dict[str, Any]:
        """What the page needs: ``/frontend/settings`` and every direction it can switch to."""
        return {
            **self.frontend_settings(),
            "directions": [
                {
                    "source": {"code": s, "name": language_name(s)},
                    "target": {"code": t, "name": language_name(t)},
                }
                for s, t in self.languages.pairs
            ],
        }
