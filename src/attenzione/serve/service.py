"""What each endpoint does, apart from HTTP: checks, the worker, and the answers' shapes.

:class:`Service` owns the one :class:`~attenzione.translator.translator.Translator` (through the
:class:`~attenzione.serve.batcher.Batcher`, the only code that calls it), the language
identifier, the keys and the limits. Its methods take the fields :mod:`.fields` read and
return JSON-able values, raising :class:`~attenzione.serve.fields.ApiError` for anything
the client must fix — in LibreTranslate's order: access (key, rate) first, then the fields.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from attenzione.documents import FORMATS, DocumentError, read_document
from attenzione.pipeline.carry import MARKUP_TAG
from attenzione.serve.alignment import attention_payload
from attenzione.serve.batcher import Batcher, Decoding, QueueFull, SentenceResult, Stopped
from attenzione.serve.fields import ApiError, Repeated, get_bool, get_int, get_q, get_str
from attenzione.serve.files import FileStore, StoreFull
from attenzione.serve.language import Languages, language_name
from attenzione.serve.limits import KEY_ATTEMPTS_PER_MINUTE, KeyRing, RateLimiter
from attenzione.serve.text import Piece, assemble, plan_html, plan_text


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


def _limit(value: int, limit: int) -> bool:
    return limit != -1 and value > limit


class Service:
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
    def _source(self, fields: dict[str, Any], texts: list[str]) -> tuple[str, dict[str, Any], str]:
        """The ``source`` as sent, the language taken (detected for ``auto``), and the key of
        the model that translates it into ``target``."""
        source = (get_str(fields, "source") or "").strip().lower()
        target = (get_str(fields, "target") or "").strip().lower()
        if not source:
            raise ApiError(400, "Invalid request: missing source parameter")
        if not target:
            raise ApiError(400, "Invalid request: missing target parameter")
        detected: dict[str, Any] = {"confidence": 100.0, "language": source}
        langs = self.languages
        if source == "auto":
            detected = langs.detect_source(" ".join(texts), target)
            found = detected["language"]
            if found not in langs.sources():
                raise ApiError(
                    400,
                    f"The text looks {language_name(found)} ({found}, confidence "
                    f"{detected['confidence']:g}), which this server cannot translate: "
                    f"it translates {langs.pair()}",
                )
        lang = detected["language"]
        if lang not in langs.codes:
            raise ApiError(400, f"{source} is not supported: this server translates {langs.pair()}")
        if target not in langs.codes:
            raise ApiError(400, f"{target} is not supported: this server translates {langs.pair()}")
        if target not in langs.targets(lang):
            raise ApiError(
                400,
                f"{language_name(target)} ({target}) is not available as a target language "
                f"from {language_name(lang)} ({lang}): this server translates {langs.pair()}",
            )
        return source, detected, self._route(lang, target)

    def _route(self, source: str, target: str) -> str:
        """The batcher's key for a pair: its one model, or the model named ``source-target``."""
        routes = self.batcher.routes
        return self.batcher.default if len(routes) == 1 else f"{source}-{target}"

    async def translate(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        self.check_access(fields, client)
        texts, batch = get_q(fields)
        s = self.settings
        n_alt = get_int(fields, "alternatives", 0, loose=True) or 0
        n_alt = max(0, n_alt)
        if _limit(n_alt, s.alternatives_limit):
            raise ApiError(
                400, f"Invalid request: alternatives parameter must be <= {s.alternatives_limit}"
            )
        if batch and _limit(len(texts), s.batch_limit):
            raise ApiError(
                400,
                f"Invalid request: request ({len(texts)}) exceeds text limit ({s.batch_limit})",
            )
        for text in texts:
            if _limit(len(text), s.char_limit):
                raise ApiError(
                    400,
                    f"Invalid request: request ({len(text)}) exceeds text limit ({s.char_limit})",
                )
        source, detected, route = self._source(fields, texts)
        fmt = (get_str(fields, "format") or "text").strip().lower() or "text"
        if fmt not in ("text", "html"):
            raise ApiError(400, f"{fmt} format is not supported")
        want_scores = get_bool(fields, "scores")
        want_attention = get_bool(fields, "attention")
        full = get_bool(fields, "attention_all")
        layer = get_int(fields, "attention_layer", None)
        head = get_int(fields, "attention_head", None)
        want_attention = want_attention or full
        self._check_attention(route, layer, head)

        lang = detected["language"]
        plans = [plan_html(t, lang) if fmt == "html" else plan_text(t, lang) for t in texts]
        sentences = [p.text for plan in plans for p in plan if p.sentence]
        # As LibreTranslate, html gets an empty list of alternatives (one candidate each).
        n_best = 1 if fmt == "html" else n_alt + 1
        decoding = Decoding(beam=max(s.beam, n_best), n_best=n_best)
        try:
            futures = self.batcher.submit(
                sentences, decoding, attention=want_attention, model=route
            )
        except QueueFull as exc:
            raise ApiError(503, str(exc), {"Retry-After": "1"}) from None
        except Stopped as exc:
            raise ApiError(503, str(exc)) from None
        try:
            results = [await asyncio.wrap_future(f) for f in futures]
        except Exception as exc:
            raise ApiError(500, f"Cannot translate text: {exc}") from None

        items = []
        at = 0
        for plan in plans:
            n = sum(p.sentence for p in plan)
            items.append(
                self._item(
                    plan,
                    results[at : at + n],
                    fmt,
                    n_alt,
                    want_scores,
                    want_attention,
                    layer,
                    head,
                    full,
                )  # fmt: skip
            )
            at += n
        answer: dict[str, Any] = {}
        keys = ["translatedText", "alternatives", "scores", "attention"]
        for key in keys:
            if key in items[0]:
                answer[key] = [it[key] for it in items] if batch else items[0][key]
        if source == "auto":
            answer["detectedLanguage"] = [detected] * len(texts) if batch else detected
        return answer

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

    def _item(
        self,
        plan: list[Piece],
        results: list[SentenceResult],
        fmt: str,
        n_alt: int,
        want_scores: bool,
        want_attention: bool,
        layer: int | None,
        head: int | None,
        full: bool,
    ) -> dict[str, Any]:
        """One text's answer from its sentences' results."""
        html = fmt == "html"
        best = [r.candidates[0] for r in results]
        text = assemble(plan, [c.text for c in best], escape=html)
        item: dict[str, Any] = {"translatedText": text}
        # An alternative of the whole text: the r-th candidate of every sentence (or its best).
        ranks = max((len(r.candidates) for r in results), default=1)
        alt_texts: list[str] = []
        alt_conf: list[float] = []
        for rank in range(1, ranks):
            cands = [r.candidates[min(rank, len(r.candidates) - 1)] for r in results]
            text = assemble(plan, [c.text for c in cands], escape=html)
            if text != item["translatedText"] and text not in alt_texts and text:
                alt_texts.append(text)
                alt_conf.append(_mean_confidence(cands))
        if n_alt > 0:
            item["alternatives"] = alt_texts[:n_alt]
        if want_scores:
            sentences = [p.text for p in plan if p.sentence]
            item["scores"] = {
                "confidence": _mean_confidence(best),
                "alternatives": alt_conf[:n_alt],
                "sentences": [
                    {
                        "source": src,
                        "translation": r.candidates[0].text,
                        "confidence": round(r.candidates[0].confidence, 4),
                        "alternatives": [
                            {"text": c.text, "confidence": round(c.confidence, 4)}
                            for c in r.candidates[1:]
                        ],
                    }
                    for src, r in zip(sentences, results, strict=True)
                ],
            }
        if want_attention:
            item["attention"] = []
            for r in results:
                if r.maps is None:  # blank, or too long to show as one sentence
                    item["attention"].append(None)
                    continue
                try:
                    item["attention"].append(attention_payload(r.maps, layer, head, full))
                except ValueError as exc:
                    raise ApiError(400, f"Invalid request: {exc}") from None
        return item

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
        if _limit(chars, s.file_chars):
            raise ApiError(
                400,
                f"Invalid request: the document has {chars} characters to translate, "
                f"more than this server's limit of {s.file_chars}",
            )
        sample = MARKUP_TAG.sub(" ", " ".join(doc.segments)[:4000])
        _, _, route = self._source(fields, [sample])
        decoding = Decoding(beam=s.beam, n_best=1)
        translations: list[str] = []
        step = max(1, min(s.batch_limit if s.batch_limit != -1 else 100, 100))
        futures: list[Any] = []
        try:
            async with asyncio.timeout(s.file_timeout):
                # a chunk at a time, so that texts sent meanwhile are not stuck behind it
                for at in range(0, len(doc.segments), step):
                    futures = self.batcher.submit(
                        doc.segments[at : at + step], decoding, model=route
                    )
                    for f in futures:
                        translations.append((await asyncio.wrap_future(f)).candidates[0].text)
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
        try:
            out = await asyncio.to_thread(doc.write, translations)
        except (DocumentError, ValueError) as exc:
            raise ApiError(500, f"Cannot write the translated document: {exc}") from None
        try:
            return await asyncio.to_thread(self.files.put, out, filename)
        except StoreFull as exc:
            raise ApiError(503, str(exc), {"Retry-After": "60"}) from None

    # ------------------------------------------------------------------ the rest
    def detect(self, fields: dict[str, Any], client: str) -> list[dict[str, Any]]:
        self.check_access(fields, client)
        texts, _ = get_q(fields)
        text = " ".join(texts)
        if _limit(len(text), self.settings.char_limit):
            raise ApiError(
                400,
                f"Invalid request: request ({len(text)}) exceeds text limit "
                f"({self.settings.char_limit})",
            )
        return self.languages.detect(text)

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


def _mean_confidence(cands: list[Any]) -> float:
    """Token-weighted mean log-prob of a text made of several sentences' candidates."""
    tokens = sum(len(c.ids) + c.pieces for c in cands if c.text)  # + one <eos> each
    total = sum(c.log_prob for c in cands if c.text)
    return round(total / tokens, 4) if tokens else 0.0
