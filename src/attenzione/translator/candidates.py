"""What a translation returns: each text's :class:`Translation`, its :class:`Candidate` s best
first, and how they are put together from the text's segments (:func:`assemble`).

The text pipeline cuts a text into segments (:mod:`attenzione.pipeline`); the model translates
each segment it reads, and beam search gives each of them its hypotheses
(:mod:`attenzione.search.decoding`). A text read in one segment gets one candidate per hypothesis
(an n-best list); a text cut into several gets one, each segment's best joined, since the
segments' second-best translations do not combine into a second-best whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attenzione.pipeline import Context, Pipeline, Segment
from attenzione.search.decoding import Hypothesis

__all__ = ["Candidate", "Translation", "assemble"]


@dataclass(frozen=True)
class Candidate:
    """One candidate translation of one text, with what the model thought of it.

    ``score``: beam search's ranking score (length-normalised log-prob with the ranking
    terms; the total log-prob for greedy decoding and sampling). ``confidence``: the mean
    log-probability per generated token, each segment's closing ``<eos>`` counted as a token;
    ``exp(confidence)`` is the geometric mean of the probabilities the model gave each token
    it wrote (1.0 = certain). ``ids``: the model's raw output ids (no ``<bos>``/``<eos>``; the
    segments' ids one after the other). ``pieces``: how many segments the model translated
    (> 1 when the text was split, or carried pictographs or tags stood between its parts; 0
    when nothing was translated). ``read``: the text the model read when it translated one
    segment ("" otherwise), e.g. for
    :meth:`attenzione.translator.translator.Translator.attention`."""

    text: str
    score: float = 0.0
    log_prob: float = 0.0
    confidence: float = 0.0
    ids: tuple[int, ...] = ()
    pieces: int = 0
    read: str = ""


@dataclass(frozen=True)
class Translation:
    """The translation of one text: its candidates, best first (``n_best`` of them when the
    model translated it in one segment, else one: each segment's best, joined)."""

    source: str
    candidates: tuple[Candidate, ...]

    @property
    def text(self) -> str:
        """The best translation."""
        return self.candidates[0].text

    def __str__(self) -> str:
        return self.text


def assemble(
    source: str,
    segments: list[Segment],
    hyps: list[list[Hypothesis]],
    pipeline: Pipeline,
    ctx: Context,
    decode: Callable[[list[int]], str],
) -> Translation:
    """One text's :class:`Translation` from its ``segments`` and each one's hypotheses
    (``[]`` for a segment carried over untranslated): ``decode`` turns a hypothesis's ids
    into text, and ``pipeline`` restores it (with ``ctx``) and joins the segments."""
    read = [s for s in segments if s.ids is not None]
    if len(read) > 1:  # several segments: the best of each, joined
        hyps = [h[:1] for h in hyps]
    ranks = max((len(h) for h in hyps), default=1) or 1
    out: list[Candidate] = []
    for rank in range(ranks):
        texts, ids = [], []
        log_prob, n_tokens, score = 0.0, 0, 0.0
        for seg, h in zip(segments, hyps, strict=True):
            if seg.ids is None:
                texts.append(seg.text)  # carried over as it is
                continue
            best = h[rank]
            texts.append(pipeline.restore(seg, decode(best.tokens), ctx, best.tokens))
            log_prob += best.log_prob
            score += best.score
            n_tokens += len(best.tokens) + 1  # + <eos>
            ids.extend(best.tokens)
        text = pipeline.join(segments, texts)
        if any(c.text == text for c in out):  # the repairs can make two alike
            continue
        confidence = log_prob / n_tokens if n_tokens else 0.0
        single = read[0].text if len(read) == 1 else ""
        out.append(Candidate(text, score, log_prob, confidence, tuple(ids), len(read), single))
    return Translation(source, tuple(out))
