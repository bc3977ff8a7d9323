"""One registry for everything that shapes the search (attenzione.search.registry): the hard
constraints and the ranking terms are declared the same way; a hook registered there is
weighed by :class:`Terms` when it is a switch, built for each batch in the registry's order
only where the model has what it needs, and a user's own hooks come after the registered ones."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest
import torch

from attenzione.config import NUMBER_COVERAGE, WORD_PENALTY, DecodeConfig
from attenzione.data import WordTokenizer
from attenzione.search.constraints import Never
from attenzione.search.hooks import Term
from attenzione.search.registry import REGISTRY, HookBatch, Terms, hooks_for, register, switches
from attenzione.search.scoring import Scoring
from attenzione.search.terms import AttentionCoverage, SymbolCoverage
from tiny_model import PAROLE, WORDS, tiny_config

SWITCHES = (
    "doubled-marks",  # a rule the constraints apply, switched like the terms
    "number-coverage",
    "punctuation-coverage",
    "attention-coverage",
    "word-check",
)
BEAM = DecodeConfig(method="beam", beam_size=3)
GREEDY = DecodeConfig(method="greedy")


class _Made(Term):
    """What the registered builder below makes: remembers what it was made from."""

    def __init__(self, batch: HookBatch, weight: float) -> None:
        self.batch, self.weight = batch, weight


@pytest.fixture
def registered() -> Iterator[list[HookBatch]]:
    """A ranking term "made-here" (default weight 3) registered for one test; the batches
    its builder was given."""
    given: list[HookBatch] = []

    @register("made-here", "term", default=3.0)
    def _build(batch: HookBatch, weight: float) -> Term | None:
        given.append(batch)
        return _Made(batch, weight)

    try:
        yield given
    finally:
        del REGISTRY["made-here"]


def _scoring() -> Scoring:
    src = WordTokenizer.train([" ".join(WORDS)])
    tgt = WordTokenizer.train([" ".join(PAROLE)])
    return Scoring(tiny_config(src.vocab_size, tgt.vocab_size), src, tgt)


def _batch(scoring: Scoring, cfg: DecodeConfig) -> HookBatch:
    return HookBatch(scoring, torch.tensor([[4, 5, 2], [6, 2, 0]]), [[4, 5, 2], [6, 2]], cfg)


def test_the_switches_are_registered_in_order_with_their_defaults() -> None:
    assert tuple(switches()) == SWITCHES
    kinds = {name: entry.kind for name, entry in REGISTRY.items()}
    assert kinds["doubled-marks"] == kinds["prefix"] == kinds["corpus-tags"] == "constraint"
    assert kinds["number-coverage"] == kinds["word-check"] == "term"
    terms = Terms()
    assert terms["number-coverage"] == NUMBER_COVERAGE and terms["word-check"] == WORD_PENALTY
    assert dict(terms) == {n: switches()[n].default for n in SWITCHES}
    assert Terms({"number-coverage": 1.0}) == Terms(number_coverage=1.0)  # Python's spelling


def test_terms_are_frozen_values() -> None:
    terms = Terms(number_coverage=0.0)
    assert terms == Terms(number_coverage=0.0) != Terms()
    assert hash(terms) == hash(Terms(number_coverage=0.0))
    assert pickle.loads(pickle.dumps(terms)) == terms  # what worker processes are sent
    assert dict(terms.without(["word-check"])) == {**terms, "word-check": 0.0}
    assert dict(Terms.none()) == dict.fromkeys(SWITCHES, 0.0)
    with pytest.raises(AttributeError, match="frozen"):
        terms.word_check = 1.0  # type: ignore[attr-defined]


def test_weights_that_are_not_a_switch_are_refused_in_one_line() -> None:
    for bad in (
        lambda: Terms(no_such_term=1.0),
        lambda: Terms({"prefix": 1.0}),  # a constraint without a weight is no switch
        lambda: Terms().without(["no-such-term"]),
    ):
        with pytest.raises(ValueError, match="unknown ranking term") as err:
            bad()
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="the weight of attention-coverage"):
        Terms(attention_coverage=float("nan"))
    with pytest.raises(ValueError, match="given twice"):
        Terms({"word-check": 1.0}, word_check=2.0)
    with pytest.raises(ValueError, match="registered already"):
        register("word-check", "term", default=1.0)(lambda batch, weight: None)
    with pytest.raises(ValueError, match="'constraint' or a 'term'"):
        register("odd", "rule")  # type: ignore[arg-type]


def test_a_registered_term_is_weighed_switched_and_built_like_the_shipped_ones(
    registered: list[HookBatch],
) -> None:
    scoring = _scoring()
    assert Terms()["made-here"] == 3.0 and Terms.none()["made-here"] == 0.0
    batch = _batch(scoring, BEAM)
    constraints, terms = hooks_for(batch, Terms(made_here=2.0))
    # a word-level target writes none of the carried marks, and there is no word list: the
    # punctuation coverage and the word check do not apply to this model
    assert [type(t) for t in terms] == [SymbolCoverage, AttentionCoverage, _Made]
    made = terms[-1]
    assert isinstance(made, _Made) and made.weight == 2.0 and made.batch is batch
    assert made.batch.symbols.shape == (2, 10)  # the ten digits: no carried mark here
    # switched off by name, or weighed 0: not built, not even asked
    asked = len(registered)
    for off in (Terms(made_here=0.0), Terms().without(["made-here"])):
        kinds = [type(t) for t in hooks_for(batch, off)[1]]
        assert kinds == [SymbolCoverage, AttentionCoverage]
    assert len(registered) == asked
    # greedy decoding and sampling rank with nothing; the constraints still hold
    greedy = hooks_for(_batch(scoring, GREEDY), Terms())
    assert greedy[1] == [] and [type(c) for c in greedy[0]] == [type(c) for c in constraints]


def test_a_users_hooks_come_after_the_registered_ones() -> None:
    scoring = _scoring()
    batch = _batch(scoring, BEAM)
    base_constraints, base_terms = hooks_for(batch, Terms())
    never = Never([7], scoring.config.eos_id)
    made: list[HookBatch] = []

    def per_batch(b: HookBatch) -> Term:
        made.append(b)
        return _Made(b, 1.0)

    constraints, terms = hooks_for(batch, Terms(), [never, per_batch, lambda b: None])
    assert [type(c) for c in constraints] == [*map(type, base_constraints), Never]
    assert constraints[-1] is never
    assert [type(t) for t in terms] == [*map(type, base_terms), _Made] and made == [batch]
    # greedy decoding: the user's constraint holds, the user's term ranks nothing
    greedy = hooks_for(_batch(scoring, GREEDY), Terms(), [never, per_batch])
    assert greedy[0][-1] is never and greedy[1] == []
    with pytest.raises(TypeError, match="hook 0 made a str"):
        hooks_for(batch, Terms(), [lambda b: "no hook"])  # type: ignore[list-item, return-value]
