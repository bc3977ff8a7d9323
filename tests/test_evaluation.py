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


def test_number_fidelity_on_a_hand_made_example() -> None:
    from attenzione.evaluation import copy_fidelity, number_fidelity

    sources = [
        "I was born in 2017.",  # 2017 → 20177: lost
        "Call 555-1234 at 10:30.",  # 555-1234 and 10:30: kept
        "7 of 7 cats cost 1,000 euros or 3.5 each.",  # one 7 lost; 1.000 and 3,5 kept
        "No numbers here.",
    ]
    hyps = [
        "Sono nato nel 20177.",
        "Chiama il 555-1234 alle 10:30.",
        "7 gatti su otto costano 1.000 euro o 3,5 ciascuno.",
        "Nessun numero.",
    ]
    fid = number_fidelity(sources, hyps)
    assert (fid.kept, fid.total) == (5, 7)
    assert fid.share == pytest.approx(5 / 7)
    perfect = number_fidelity(sources, sources)
    assert (perfect.kept, perfect.total) == (7, 7)
    cats = copy_fidelity(
        ["See https://example.org/a and run_tests() in main.py, said Tom."],
        ["Vedi https://example.org/a e run_tests() in main.py, disse Mario."],
    )
    assert (cats["urls"].kept, cats["urls"].total) == (1, 1)
    assert (cats["code"].kept, cats["code"].total) == (2, 2)
    assert (cats["names"].kept, cats["names"].total) == (0, 1)
    with pytest.raises(ValueError, match="2 sources but 1"):
        number_fidelity(["a", "b"], ["a"])
