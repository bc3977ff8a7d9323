"""Translating a pair with no model of its own through another language: a → b → c.

When Italian→German is asked for and only it→en and en→de are installed, the text is
translated into English by the first model and the English into German by the second, as
Argos Translate and LibreTranslate do (English first when several languages would do:
:func:`attenzione.translator.registry.route`). A direct model always wins over a pivot.

:class:`Pivot` has the calls of a :class:`~attenzione.translator.translator.Translator` that a
command uses: the first leg translates with the search asked for but one candidate (its best is
what the second leg reads), the second leg gives the alternatives. A candidate's ``score`` is
the second leg's; ``log_prob`` the two legs' sum and ``confidence`` the mean log-probability
per token over both legs' tokens — the output of two models, which :attr:`Pivot.via` names.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from attenzione.translator.candidates import Candidate, Translation
from attenzione.translator.translator import Translator


def _tokens(c: Candidate) -> int:
    return len(c.ids) + max(c.pieces, 1)  # the ids and each segment's <eos>


def joined(first: Candidate, second: Candidate) -> Candidate:
    """``second`` (what the second leg wrote from ``first``'s text) with the scores of both."""
    n1, n2 = _tokens(first), _tokens(second)
    confidence = (first.confidence * n1 + second.confidence * n2) / (n1 + n2)
    return replace(second, log_prob=first.log_prob + second.log_prob, confidence=confidence)


@dataclass(frozen=True)
class Pivot:
    """Two translators one after the other (the module docstring)."""

    first: Translator
    second: Translator

    @property
    def via(self) -> str:
        """The language in the middle."""
        return str(self.first.info.get("target_language", "?"))

    def _first_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """What the first leg is asked: the search, with one candidate, and no prefix (a
        prefix is the final translation's beginning)."""
        out = {k: v for k, v in options.items() if k in ("search", "batch_size")}
        if "search" in out:
            out["search"] = replace(out["search"], n_best=1)
        return out

    def _second_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in options.items() if k in ("search", "batch_size", "prefix")}

    def translate(self, texts: str | Sequence[str], **options: Any) -> list[Translation]:
        """Each text through both legs (the module docstring)."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        mid = self.first.translate(texts, **self._first_options(options))
        out = self.second.translate([t.text for t in mid], **self._second_options(options))
        return [self._join(t, m, o) for t, m, o in zip(texts, mid, out, strict=True)]

    def translate_iter(self, texts: Iterable[str], **options: Any) -> Iterator[Translation]:
        """:meth:`translate`, streamed: each leg streams in its own chunks."""
        given = list(texts)
        mid = list(self.first.translate_iter(given, **self._first_options(options)))
        out = self.second.translate_iter([t.text for t in mid], **self._second_options(options))
        for t, m, o in zip(given, mid, out, strict=True):
            yield self._join(t, m, o)

    @staticmethod
    def _join(source: str, mid: Translation, out: Translation) -> Translation:
        if not mid.candidates or not mid.candidates[0].ids:
            return Translation(source, out.candidates)
        best = mid.candidates[0]
        return Translation(source, tuple(joined(best, c) for c in out.candidates))

    def prefix_ids(self, prefix: str) -> tuple[int, ...]:
        """A prefix is the final translation's: the second leg must be able to write it."""
        return self.second.prefix_ids(prefix)
