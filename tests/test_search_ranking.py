"""Beam search's ranking terms come from a registry (attenzione.search.ranking.RANKING_TERMS):
a term registered there is weighed by :class:`Terms`, switched by name and built for each
batch by :class:`Scoring`, in the registry's order, like the shipped ones."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest
import torch

from attenzione.config import NUMBER_COVERAGE, WORD_PENALTY, DecodeConfig
from attenzione.data import WordTokenizer
from attenzione.search.hooks import Term
from attenzione.search.ranking import (
    RANKING_TERMS,
    TERM_NAMES,
    TermBatch,
    Terms,
    ranking_term,
)
from attenzione.search.scoring import Scoring
from attenzione.search.terms import AttentionCoverage, SymbolCoverage
from tiny_model import PAROLE, WORDS, tiny_config

SHIPPED = (
    "number-coverage",
    "punctuation-coverage",
    "attention-coverage",
    "word-check",
    "doubled-marks",  # a rule the constraints apply, switched like the terms
)


class _Made(Term):
    """What the registered builder below makes: remembers what it was made from."""

    def __init__(self, batch: TermBatch, weight: float) -> None:
        self.batch, self.weight = batch, weight


@pytest.fixture
def registered() -> Iterator[list[TermBatch]]:
    """A ranking term "made-here" (default weight 3) registered for one test; the batches
    its builder was given."""
    given: list[TermBatch] = []

    @ranking_term("made-here", 3.0)
    def _build(batch: TermBatch, weight: float) -> Term | None:
        given.append(batch)
        return _Made(batch, weight)

    try:
        yield given
    finally:
        del RANKING_TERMS["made-here"], TERM_NAMES["made-here"]


def _scoring() -> Scoring:
    src = WordTokenizer.train([" ".join(WORDS)])
    tgt = WordTokenizer.train([" ".join(PAROLE)])
    return Scoring(tiny_config(src.vocab_size, tgt.vocab_size), src, tgt)


def test_the_shipped_terms_are_registered_in_order_with_their_defaults() -> None:
    assert tuple(RANKING_TERMS) == tuple(TERM_NAMES) == SHIPPED
    assert TERM_NAMES["word-check"] == "word_check"
    terms = Terms()
    assert terms.number_coverage == NUMBER_COVERAGE and terms.word_check == WORD_PENALTY
    assert terms.to_dict() == {n: RANKING_TERMS[n].default for n in SHIPPED}
    assert Terms(1.0, 2.0) == Terms(number_coverage=1.0, punctuation_coverage=2.0)


def test_terms_are_frozen_values() -> None:
    terms = Terms(number_coverage=0.0)
    assert terms == Terms(number_coverage=0.0) != Terms()
    assert hash(terms) == hash(Terms(number_coverage=0.0))
    assert pickle.loads(pickle.dumps(terms)) == terms  # what worker processes are sent
    assert terms.without(["word-check"]).to_dict() == {**terms.to_dict(), "word-check": 0.0}
    with pytest.raises(AttributeError):
        terms.word_check = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        _ = terms.no_such_term


def test_weights_that_are_not_a_terms_are_refused() -> None:
    with pytest.raises(TypeError, match="no_such_term"):
        Terms(no_such_term=1.0)
    with pytest.raises(TypeError, match=f"at most {len(SHIPPED)}"):
        Terms(*(1.0 for _ in range(len(SHIPPED) + 1)))
    with pytest.raises(ValueError, match="the weight of attention-coverage"):
        Terms(attention_coverage=float("nan"))
    with pytest.raises(KeyError):
        Terms().without(["no-such-term"])
    with pytest.raises(ValueError, match="registered already"):
        ranking_term("word-check", 1.0)(lambda batch, weight: None)


def test_a_registered_term_is_weighed_switched_and_built_like_the_shipped_ones(
    registered: list[TermBatch],
) -> None:
    scoring = _scoring()
    assert Terms().made_here == 3.0 and Terms.none().made_here == 0.0
    assert Terms(0.5, 0.5, 0.0, 0.0, 1.0, 2.0).made_here == 2.0  # the registry's order
    batch = torch.tensor([[4, 5, 2], [6, 2, 0]])
    sources = [[4, 5, 2], [6, 2]]
    beam = DecodeConfig(method="beam", beam_size=3)
    built = scoring.terms(batch, sources, Terms(made_here=2.0), beam)
    # a word-level target writes none of the carried marks, and there is no word list:
    # the punctuation coverage and the word check are not built
    assert [type(t) for t in built] == [SymbolCoverage, AttentionCoverage, _Made]
    made = built[-1]
    assert isinstance(made, _Made) and made.weight == 2.0
    assert made.batch.ids is batch and made.batch.sources == sources and made.batch.cfg == beam
    assert made.batch.symbols.shape == (2, 10)  # the ten digits: no carried mark here
    # switched off by name, or weighed 0: not built, not even asked
    asked = len(registered)
    for off in (Terms(made_here=0.0), Terms().without(["made-here"])):
        kinds = [type(t) for t in scoring.terms(batch, sources, off, beam)]
        assert kinds == [SymbolCoverage, AttentionCoverage]
    assert len(registered) == asked
    # greedy decoding and sampling rank with nothing
    assert scoring.terms(batch, sources, Terms(), DecodeConfig(method="greedy")) == []
