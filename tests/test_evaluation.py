"""sacreBLEU scoring: one reference per line, and several references per distinct source."""

from __future__ import annotations

import pytest

from attenzione.evaluation import corpus_scores, group_references

PAIRS = [
    ("Run!", "Corri!"),
    ("Run!", "Corra!"),
    ("Run!", "Correte!"),
    ("The cat is sleeping on the sofa.", "Il gatto dorme sul divano."),
]


def test_group_references_keeps_first_appearance_order_and_every_variant() -> None:
    sources, refs = group_references(PAIRS[::-1])
    assert sources == ["The cat is sleeping on the sofa.", "Run!"]
    assert refs == [["Il gatto dorme sul divano."], ["Correte!", "Corra!", "Corri!"]]


def test_perfect_hypotheses_score_100_with_one_or_several_references() -> None:
    one = corpus_scores([t for _, t in PAIRS], [t for _, t in PAIRS])
    assert one.bleu == pytest.approx(100.0) and one.chrf == pytest.approx(100.0)
    assert "nrefs:1" in one.bleu_signature
    sources, refs = group_references(PAIRS)
    # matching any one variant is a perfect score once all variants are references
    many = corpus_scores(["Corra!", "Il gatto dorme sul divano."], refs)
    assert many.bleu == pytest.approx(100.0)
    assert many.n_sentences == len(sources) == 2
    assert "nrefs:var" in many.bleu_signature


def test_several_references_never_score_below_the_first_alone() -> None:
    hyps = ["Correte!", "Il gatto dorme sul letto."]
    _, refs = group_references(PAIRS)
    single = corpus_scores(hyps, [r[0] for r in refs])
    multi = corpus_scores(hyps, refs)
    assert multi.bleu > single.bleu
    assert multi.chrf > single.chrf


def test_scoring_rejects_mismatched_or_empty_input() -> None:
    with pytest.raises(ValueError, match="pair up"):
        corpus_scores(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        corpus_scores([], [])
    with pytest.raises(ValueError, match="at least one reference"):
        corpus_scores(["a"], [[]])
