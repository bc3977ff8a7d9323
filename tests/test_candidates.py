"""attenzione.translator.candidates: a text's candidates put together from its segments'
hypotheses."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import pytest

from attenzione.pipeline import Context, Pipeline, Segment
from attenzione.search.decoding import Hypothesis
from attenzione.translator.candidates import Candidate, Translation, assemble

WORDS = {1: "il", 2: "gatto", 3: "dorme", 4: "cane", 5: "Il"}
RAW = Pipeline.build(())  # no text step: restore gives the decoded text back
CTX = cast(Context, SimpleNamespace())  # what no step reads


def _decode(ids: list[int]) -> str:
    return " ".join(WORDS[i] for i in ids)


def test_one_segment_gives_its_n_best_in_order_with_their_numbers() -> None:
    seg = Segment("the cat sleeps", ids=[7, 8, 9, 2])
    hyps = [Hypothesis([1, 2, 3], -0.5, -1.2), Hypothesis([1, 4, 3], -0.9, -2.0)]
    out = assemble("the cat sleeps", [seg], [hyps], RAW, CTX, _decode)
    assert isinstance(out, Translation) and out.source == "the cat sleeps"
    assert [c.text for c in out.candidates] == ["il gatto dorme", "il cane dorme"]
    best = out.candidates[0]
    assert best == Candidate("il gatto dorme", -0.5, -1.2, best.confidence, (1, 2, 3), 1, seg.text)
    # the mean log-prob per token, the closing <eos> counted: 3 tokens + 1
    assert best.confidence == pytest.approx(-1.2 / 4)
    assert out.text == str(out) == "il gatto dorme"


def test_several_segments_give_one_candidate_each_ones_best_joined() -> None:
    first = Segment("the cat", ids=[7, 8, 2])
    carried = Segment("🐈", glue=" ", translate=False)
    second = Segment("sleeps", glue=" ", ids=[9, 2])
    hyps = [
        [Hypothesis([1, 2], -0.2, -0.4), Hypothesis([1, 4], -0.3, -0.6)],
        [],
        [Hypothesis([3], -0.1, -0.3), Hypothesis([2], -0.7, -0.9)],
    ]
    out = assemble("the cat 🐈 sleeps", [first, carried, second], hyps, RAW, CTX, _decode)
    assert len(out.candidates) == 1  # second-best parts do not make a second-best whole
    (cand,) = out.candidates
    assert cand.text == "il gatto 🐈 dorme"
    assert (cand.score, cand.log_prob) == pytest.approx((-0.3, -0.7))
    assert cand.ids == (1, 2, 3) and cand.pieces == 2 and cand.read == ""
    assert cand.confidence == pytest.approx(-0.7 / 5)  # 2 + 1 tokens, and 1 + 1


def test_candidates_that_come_out_alike_are_kept_once() -> None:
    seg = Segment("the cat", ids=[7, 8, 2])
    # two hypotheses the steps' repairs could turn into one text: here, decoded alike
    hyps = [Hypothesis([1, 2], -0.2, -0.4), Hypothesis([1, 2], -0.5, -0.8)]
    out = assemble("the cat", [seg], [hyps], RAW, CTX, _decode)
    assert [c.score for c in out.candidates] == [-0.2]


def test_a_text_with_nothing_to_translate_is_carried_over() -> None:
    seg = Segment("🐈", translate=False)
    out = assemble("🐈", [seg], [[]], RAW, CTX, _decode)
    assert out.candidates == (Candidate("🐈", 0.0, 0.0, 0.0, (), 0, ""),)
