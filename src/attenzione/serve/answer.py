"""One text's part of a ``/translate`` answer, from the results of its sentences.

A text was cut into pieces (:mod:`.text`): whitespace and markup kept as they are, and
sentences the worker translated. Its answer is the pieces put back together around the
best candidate of every sentence, and, when asked, the alternatives of the whole text (the
r-th candidate of every sentence), the scores (per text and per sentence) and the attention
(per sentence). A text that is not translated at all — already in the target language — is
one kept piece and no sentence: it comes back as it is, with no alternatives, no sentences
in its scores and no attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attenzione.serve.alignment import attention_payload
from attenzione.serve.batcher import SentenceResult
from attenzione.serve.fields import ApiError
from attenzione.serve.text import Piece, assemble


@dataclass(frozen=True)
class Wanted:
    """What a request asked for besides the translation."""

    fmt: str = "text"
    alternatives: int = 0
    scores: bool = False
    attention: bool = False
    layer: int | None = None
    head: int | None = None
    full: bool = False


def mean_confidence(cands: list[Any]) -> float:
    """Token-weighted mean log-prob of a text made of several sentences' candidates."""
    tokens = sum(len(c.ids) + c.pieces for c in cands if c.text)  # + one <eos> each
    total = sum(c.log_prob for c in cands if c.text)
    return round(total / tokens, 4) if tokens else 0.0


def _models(results: list[SentenceResult]) -> dict[str, Any]:
    """``{"models": [first, second], "via": b}`` when the text went through another language
    (its confidences are then the two models' together, per token), else nothing."""
    legs = next((r.models for r in results if r.models), ())
    if not legs:
        return {}
    return {"models": list(legs), "via": legs[0].split("-")[-1]}


def text_answer(plan: list[Piece], results: list[SentenceResult], want: Wanted) -> dict[str, Any]:
    """One text's answer from its sentences' results (one per sentence piece of ``plan``)."""
    html = want.fmt == "html"
    n_alt = want.alternatives
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
            alt_conf.append(mean_confidence(cands))
    if n_alt > 0:
        item["alternatives"] = alt_texts[:n_alt]
    if want.scores:
        sentences = [p.text for p in plan if p.sentence]
        item["scores"] = {
            "confidence": mean_confidence(best),
            **_models(results),
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
    if want.attention:
        item["attention"] = []
        for r in results:
            if r.maps is None:  # blank, or too long to show as one sentence
                item["attention"].append(None)
                continue
            try:
                payload = attention_payload(r.maps, want.layer, want.head, want.full)
                if r.first is not None and r.first.maps is not None:  # both legs of a pivot
                    payload["first_leg"] = attention_payload(
                        r.first.maps, want.layer, want.head, want.full
                    )
                    payload["models"] = list(r.models)
                item["attention"].append(payload)
            except ValueError as exc:
                raise ApiError(400, f"Invalid request: {exc}") from None
    return item
