"""Our own views of one model, beside LibreTranslate's API: ``/trace`` (the decoding step by
step), ``/journey``, ``/training``, ``/occlusion`` and ``/embeddings`` (inside the model).

Each follows one sentence (or one word) and one model: :meth:`Views._one_sentence` makes the
checks they share (access, length, the language, a pair reached through another language
refused), and :meth:`Views._alone` runs the work in the batcher's worker, alone in its
batch. :class:`~attenzione.serve.service.Service` has these methods by inheriting them; the
access check, the bounds and the models' loading are its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from attenzione.serve.batcher import Batcher, Decoding, QueueFull, Route, Stopped
from attenzione.serve.fields import ApiError, Repeated, get_bool, get_int, get_q, get_str
from attenzione.serve.language import Languages
from attenzione.serve.routing import legs, read_sources


class _Limits(Protocol):
    """What the views read of the service's settings."""

    @property
    def beam(self) -> int: ...

    @property
    def char_limit(self) -> int: ...


def over_limit(value: int, limit: int) -> bool:
    """Whether ``value`` passes a server limit (-1: none)."""
    return limit != -1 and value > limit


def _words(fields: dict[str, Any], name: str) -> list[str]:
    """``analogy`` (three words) or ``similarity`` (two): a list of strings, a repeated form
    field, or one string of words separated by commas."""
    n = 3 if name == "analogy" else 2
    value = fields.get(name)
    if isinstance(value, str):
        value = [w for w in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise ApiError(400, f"Invalid request: {name} must be a list of {n} words")
    if len(value) != n:
        raise ApiError(
            400, f"Invalid request: {name} takes {n} words ({'a, b, c' if n == 3 else 'a, b'}), "
            f"not {len(value)}"
        )  # fmt: skip
    for w in value:
        try:
            w.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(400, f"Invalid request: {name} is not valid Unicode text") from None
    return list(value)


class Views:
    """The one-model views (the module docstring); what they need of the service below."""

    batcher: Batcher
    languages: Languages
    settings: _Limits

    def check_access(self, fields: dict[str, Any], client: str) -> None:
        raise NotImplementedError

    def _check_bounds(self, route: str, decoding: Decoding) -> None:
        raise NotImplementedError

    async def _ready(self, routes: Iterable[str]) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ /trace
    async def trace(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        """One sentence's decoding step by step (:meth:`Translator.trace`, our extension):
        ``q`` (one sentence), ``source``, ``target``, ``beam`` (1: greedy; default the
        server's), ``top_k`` (1..50, default 10), ``prefix``, ``ablate`` (parts, comma
        separated or a list) and, with ``explain``, one head's arithmetic
        (``explain_kind``, ``explain_layer``, ``explain_head``: cross, the last, 0)."""
        text, route = await self._one_sentence(fields, client, "/trace")
        beam = get_int(fields, "beam", self.settings.beam)
        top_k = get_int(fields, "top_k", 10)
        assert beam is not None and top_k is not None
        if beam < 1:
            raise ApiError(400, "Invalid request: beam must be >= 1")
        if not 1 <= top_k <= 50:
            raise ApiError(400, "Invalid request: top_k must be 1..50")
        prefix = get_str(fields, "prefix") or ""
        ablate_field = fields.get("ablate")
        if ablate_field is None or isinstance(ablate_field, str | Repeated):
            ablate: Any = get_str(fields, "ablate") or ""
        elif isinstance(ablate_field, list) and all(isinstance(a, str) for a in ablate_field):
            ablate = ablate_field
        else:
            raise ApiError(400, "Invalid request: ablate must be a string or a list of strings")
        explain = get_bool(fields, "explain")
        kind = get_str(fields, "explain_kind") or "cross"
        if kind not in ("encoder", "decoder", "cross"):
            raise ApiError(400, "Invalid request: explain_kind must be encoder, decoder or cross")
        ex_layer = get_int(fields, "explain_layer", None)
        ex_head = get_int(fields, "explain_head", 0)
        self._check_bounds(route, Decoding(beam=beam, n_best=1))
        config = self.batcher.routes[route].translator.model.config
        n_layers = config.n_enc_layers if kind == "encoder" else config.n_dec_layers
        layer = n_layers - 1 if ex_layer is None else ex_layer
        if explain and not 0 <= layer < n_layers:
            raise ApiError(
                400, f"Invalid request: explain_layer {layer} is out of range: 0..{n_layers - 1}"
            )
        if explain and not 0 <= (ex_head or 0) < config.n_heads:
            raise ApiError(
                400,
                f"Invalid request: explain_head {ex_head} is out of range: 0..{config.n_heads - 1}",
            )

        def work(r: Route) -> dict[str, Any]:
            from attenzione.translator.explain import explanation_data

            request = self.batcher.request(route, Decoding(beam=beam, n_best=1, prefix=prefix))
            made = r.translator.trace(text, request, ablate=ablate, top_k=top_k)
            out = made.to_dict()
            if explain:
                out["explain"] = explanation_data(made.maps, kind, layer, ex_head or 0)
            return out

        return await self._alone(work, route, "trace the text")

    async def _one_sentence(
        self, fields: dict[str, Any], client: str, path: str
    ) -> tuple[str, str]:
        """The one sentence ``q`` of a request to ``path`` and the model it goes to (the
        access, length and language checks of every call that follows one sentence)."""
        self.check_access(fields, client)
        texts, batch = get_q(fields)
        if batch or len(texts) != 1:
            raise ApiError(400, f"Invalid request: {path} follows one sentence: q is a string")
        text = texts[0]
        if not text.strip():
            raise ApiError(400, "Invalid request: q is empty")
        for name in ("q", "reference", "other"):
            value = fields.get(name)
            if isinstance(value, str) and over_limit(len(value), self.settings.char_limit):
                raise ApiError(
                    400,
                    f"Invalid request: request ({len(value)}) exceeds text limit "
                    f"({self.settings.char_limit})",
                )
        _, (reading,) = read_sources(self.languages, self.batcher, fields, texts)
        if reading.route is None:
            raise ApiError(400, "Invalid request: the text is already in the target language")
        keys = legs(reading.route)
        if len(keys) > 1:
            raise ApiError(
                400,
                f"Invalid request: {path} follows one model, and this pair goes through "
                f"another language with two ({' then '.join(keys)}): ask for either of them",
            )
        await self._ready([reading.route])
        return text, reading.route

    async def _alone(
        self, work: Callable[[Route], dict[str, Any]], route: str, what: str
    ) -> dict[str, Any]:
        """``work`` run alone in the batcher's worker on ``route``'s model: its answer; a
        ValueError it raises is the client's 400, anything else a 500 that says ``what``."""
        try:
            future = self.batcher.call(work, model=route)
        except QueueFull as exc:
            raise ApiError(503, str(exc), {"Retry-After": "1"}) from None
        except Stopped as exc:
            raise ApiError(503, str(exc)) from None
        try:
            answer: dict[str, Any] = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except ValueError as exc:  # what the model refuses: a prefix, a part, a token
            raise ApiError(400, f"Invalid request: {exc}") from None
        except Exception as exc:
            raise ApiError(500, f"Cannot {what}: {exc}") from None
        return answer

    # ------------------------------------------------------------------ inside the model
    async def journey(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        """One token's way through the whole model (:meth:`Translator.journey`, our
        extension): ``q``, ``token`` (a decoder position, default 0), ``reference`` (teacher-
        force it instead of the translation), ``beam``."""
        text, route = await self._one_sentence(fields, client, "/journey")
        token = get_int(fields, "token", 0)
        beam = get_int(fields, "beam", self.settings.beam)
        assert token is not None and beam is not None
        if token < 0:
            raise ApiError(400, "Invalid request: token must be >= 0")
        if beam < 1:
            raise ApiError(400, "Invalid request: beam must be >= 1")
        self._check_bounds(route, Decoding(beam=beam, n_best=1))
        reference = get_str(fields, "reference") or None

        def work(r: Route) -> dict[str, Any]:
            return r.translator.journey(text, token, reference, beam=beam).to_dict()

        return await self._alone(work, route, "follow the token")

    async def training(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        """The training view of ``q`` → ``reference`` (teacher forcing, each position's
        probability and loss, greedy's choice) and the masks of a padded batch of ``q`` and
        ``other`` (default: the first half of ``q``'s words) — our extension."""
        from attenzione.training.view import padded_batch_masks, shorter, teacher_forced

        text, route = await self._one_sentence(fields, client, "/training")
        reference = get_str(fields, "reference") or ""
        if not reference.strip():
            raise ApiError(
                400, "Invalid request: reference is empty: give the translation to teacher-force"
            )
        other = get_str(fields, "other") or shorter(text)

        def work(r: Route) -> dict[str, Any]:
            view = teacher_forced(r.translator, text, reference)
            return {**view, "masks": padded_batch_masks(r.translator, text, other)}

        return await self._alone(work, route, "show the training view")

    async def occlusion(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        """Occlusion attribution beside every head's cross-attention
        (:meth:`Translator.occlusion`, our extension): ``q``, ``reference`` (teacher-force it
        instead of the translation), ``words`` (those to remove; default each), ``beam``."""
        text, route = await self._one_sentence(fields, client, "/occlusion")
        beam = get_int(fields, "beam", self.settings.beam)
        assert beam is not None
        if beam < 1:
            raise ApiError(400, "Invalid request: beam must be >= 1")
        self._check_bounds(route, Decoding(beam=beam, n_best=1))
        reference = get_str(fields, "reference") or None
        words_field = fields.get("words")
        if words_field is None or isinstance(words_field, str | Repeated):
            given = get_str(fields, "words") or ""
            words = [w for w in given.split(",") if w.strip()] or None
        elif isinstance(words_field, list) and all(isinstance(w, str) for w in words_field):
            words = list(words_field) or None
        else:
            raise ApiError(400, "Invalid request: words must be a string or a list of strings")

        def work(r: Route) -> dict[str, Any]:
            return r.translator.occlusion(text, reference, beam=beam, words=words)

        return await self._alone(work, route, "measure the occlusion")

    async def embeddings(self, fields: dict[str, Any], client: str) -> dict[str, Any]:
        """The model's own embedding space (:mod:`attenzione.translator.embedding_space`, our
        extension): one of ``word`` (its nearest pieces), ``analogy`` ([a, b, c]: the pieces
        nearest to a − b + c) or ``similarity`` ([a, b]), with ``k`` (1..200, default 10)
        and ``side`` (source or target, default source) of the model of ``source`` →
        ``target``."""
        from attenzione.translator.embedding_space import MAX_K

        self.check_access(fields, client)
        asked = [n for n in ("word", "analogy", "similarity") if fields.get(n) not in (None, "")]
        if len(asked) != 1:
            raise ApiError(
                400,
                "Invalid request: give one of word, analogy ([a, b, c]) or similarity ([a, b])"
                + (f", not {' and '.join(asked)}" if asked else ""),
            )
        kind = asked[0]
        words = [get_str(fields, "word") or ""] if kind == "word" else _words(fields, kind)
        k = get_int(fields, "k", 10)
        assert k is not None
        if not 1 <= k <= MAX_K:
            raise ApiError(400, f"Invalid request: k must be 1..{MAX_K}")
        side = (get_str(fields, "side") or "source").strip().lower()
        if side not in ("source", "target"):
            raise ApiError(400, "Invalid request: side must be source or target")
        if (get_str(fields, "source") or "").strip().lower() == "auto":
            raise ApiError(
                400, "Invalid request: /embeddings reads one model's table: name its source "
                "language, not auto"
            )  # fmt: skip
        _, (reading,) = read_sources(self.languages, self.batcher, fields, words[:1])
        route = reading.route
        if route is None:
            raise ApiError(400, "Invalid request: source and target are the same language")
        if len(legs(route)) > 1:  # two models through another language: no one table
            raise ApiError(
                400,
                f"Invalid request: no one model translates {reading.language} → "
                f"{(get_str(fields, 'target') or '').strip().lower()} here (it goes through "
                "another language): /embeddings reads one model's table",
            )

        def work(r: Route) -> dict[str, Any]:
            space = r.translator.embedding_space(side)
            if kind == "word":
                return space.nearest(words[0], k).to_dict()
            if kind == "analogy":
                return space.analogy(words[0], words[1], words[2], k).to_dict()
            return space.similarity(words[0], words[1]).to_dict()

        return await self._alone(work, route, "read the embedding table")
