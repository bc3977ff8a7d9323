"""tests/compare.py, the helper the suite compares differently computed results with: it must
let a score's last digits move and catch everything else."""

from __future__ import annotations

import pytest

from attenzione.translator.candidates import Candidate, Translation
from compare import assert_same_results


def _translation(text: str = "il gatto", score: float = -1.7517301119290865) -> Translation:
    return Translation("the cat", (Candidate(text, score, score, score / 3, (5, 6), 1, "the cat"),))


def test_a_score_moved_in_its_seventh_digit_is_the_same_result() -> None:
    # the two scores an Intel Xeon and an AMD EPYC gave for one translation (issue 64)
    assert_same_results([_translation()], [_translation(score=-1.7517302586482122)])


@pytest.mark.parametrize(
    ("other", "where"),
    [
        (_translation(text="il cane"), r"result\[0\]\.candidates\[0\]\.text"),
        (_translation(score=-1.76), r"result\[0\]\.candidates\[0\]\.score"),
        (
            Translation("the cat", (Candidate("il gatto", -1.0, -1.0, 0.0, (5, 7), 1, "the cat"),)),
            r"candidates\[0\]\.score|candidates\[0\]\.ids",
        ),
    ],
)
def test_other_texts_ids_or_scores_are_caught_and_named(other: Translation, where: str) -> None:
    with pytest.raises(AssertionError, match=where):
        assert_same_results([_translation()], [other])


def test_lengths_types_and_keys_must_match() -> None:
    with pytest.raises(AssertionError, match="2 items != 1"):
        assert_same_results([_translation(), _translation()], [_translation()])
    with pytest.raises(AssertionError, match="list against tuple"):
        assert_same_results([1.0], (1.0,))
    with pytest.raises(AssertionError, match="keys"):
        assert_same_results({"a": 1.0}, {"b": 1.0})
    with pytest.raises(AssertionError, match=r"result\['a'\]"):
        assert_same_results({"a": "x"}, {"a": "y"})
