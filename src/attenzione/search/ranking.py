"""Beam search's ranking terms by name: a registry, and the weights a translation uses.

Each ranking term (:mod:`attenzione.search.terms`) a user can switch is registered here with
:func:`ranking_term`: its name (as ``--no-step``, info.json and the service write it), its
default weight (:mod:`attenzione.config`) and a builder that makes a batch's
:class:`~attenzione.search.hooks.Term` from one model's tables
(:class:`attenzione.search.scoring.Scoring`) and a weight. :class:`Terms` holds a weight for
every registered term (0 = off); beam search applies the terms in the registry's order:

* ``number-coverage``: per digit of the source's numbers not written;
* ``punctuation-coverage``: per comma, semicolon, colon or bracket of the source not written;
* ``attention-coverage``: GNMT's coverage penalty of a finished translation;
* ``word-check``: per word written that is neither known nor in the source;
* ``doubled-marks``: not a charge but a rule every search method keeps while its weight is
  above 0 — a punctuation mark twice in a row only where the source has it so
  (:class:`~attenzione.search.constraints.NoDoubledMarks`, made by
  :meth:`Scoring.constraints <attenzione.search.scoring.Scoring.constraints>`); registered
  here so that ``--no-step``, ``--raw`` and info.json switch it like the terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torch import Tensor

from attenzione.config import (
    ATTENTION_COVERAGE,
    NUMBER_COVERAGE,
    PUNCTUATION_COVERAGE,
    WORD_PENALTY,
    DecodeConfig,
)
from attenzione.search.hooks import Term
from attenzione.search.terms import AttentionCoverage, SymbolCoverage, WordPenalty

if TYPE_CHECKING:
    from attenzione.search.scoring import Scoring

# the symbol columns of the coverage tables: first the digits, then the carried marks
DIGITS = "0123456789"


@dataclass
class TermBatch:
    """A batch as its ranking terms are made for it: the model's ``scoring``, the (B,S)
    source ``ids``, each row's ``sources`` ids and the search's ``cfg``."""

    scoring: Scoring
    ids: Tensor
    sources: Sequence[Sequence[int]]
    cfg: DecodeConfig

    @cached_property
    def symbols(self) -> Tensor:
        """(B,C) the digits and carried marks each source has (:meth:`Scoring.symbols`)."""
        return self.scoring.symbols(self.ids)

    @cached_property
    def table(self) -> Tensor:
        """(V,C) how many of each digit and carried mark every target piece writes."""
        return self.scoring.symbol_table.to(self.ids.device)


# what makes a batch's term from its weight (None: the model cannot rank with it)
Builder = Callable[[TermBatch, float], Term | None]


@dataclass(frozen=True)
class RankingTerm:
    """A ranking term as a model's users switch it: its ``name`` (as ``--no-step`` and
    info.json write it), its ``default`` weight, and ``build``, which makes a batch's
    :class:`~attenzione.search.hooks.Term` with a weight > 0 (None: the model cannot rank
    with it)."""

    name: str
    default: float
    build: Builder
    # what the term needs of the pair's language profiles (attenzione.languages.REQUIREMENTS)
    needs: tuple[str, ...] = ()


# the ranking terms, in the order beam search applies them (each name -> its entry)
RANKING_TERMS: dict[str, RankingTerm] = {}
# each term's name (as --no-step and info.json write it) -> its field of Terms
TERM_NAMES: dict[str, str] = {}


def ranking_term(
    name: str, default: float, *, needs: tuple[str, ...] = ()
) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of the ranking term ``name``, which a
    pair's default pipeline has where its language profiles meet ``needs``."""

    def register(build: Builder) -> Builder:
        if name in RANKING_TERMS:
            raise ValueError(f"a ranking term named {name!r} is registered already")
        RANKING_TERMS[name] = RankingTerm(name, default, build, needs)
        TERM_NAMES[name] = name.replace("-", "_")
        return build

    return register


@ranking_term("number-coverage", NUMBER_COVERAGE)
def _number_coverage(batch: TermBatch, weight: float) -> Term | None:
    """Per digit of the source's numbers not written (in the length-normalised score)."""
    digits = slice(None, len(DIGITS))
    return SymbolCoverage(batch.symbols[:, digits], batch.table[:, digits], weight)


@ranking_term("punctuation-coverage", PUNCTUATION_COVERAGE, needs=("same-comma-rules",))
def _punctuation_coverage(batch: TermBatch, weight: float) -> Term | None:
    """Per comma, semicolon, colon or bracket of the source not written (CARRIED_MARKS)."""
    if not batch.scoring.n_marks:  # the target vocabulary writes none of them
        return None
    marks = slice(len(DIGITS), None)
    return SymbolCoverage(batch.symbols[:, marks], batch.table[:, marks], weight)


@ranking_term("attention-coverage", ATTENTION_COVERAGE)
def _attention_coverage(batch: TermBatch, weight: float) -> Term | None:
    """Times the attention coverage (≤ 0) of a finished translation."""
    c = batch.scoring.config
    return AttentionCoverage(batch.ids, batch.scoring.attention_layer, weight, c.pad_id, c.eos_id)


@ranking_term("word-check", WORD_PENALTY, needs=("target-word-list",))
def _word_check(batch: TermBatch, weight: float) -> Term | None:
    """Per word written that is neither known nor in the source (in total log-prob; needs
    the model's word list)."""
    lexicon = batch.scoring.lexicon(batch.sources, weight)
    if lexicon is None:  # the model has no word list
        return None
    return WordPenalty(lexicon, 2 * batch.cfg.beam_size, batch.ids.device)


@ranking_term("doubled-marks", 1.0)
def _doubled_marks(batch: TermBatch, weight: float) -> Term | None:
    """A rule, not a charge: :meth:`Scoring.constraints` applies it (weight > 0: on)."""
    return None


class Terms:
    """The weights of beam search's ranking terms (0 = off), one per entry of
    :data:`RANKING_TERMS`, given and read by field name (``number_coverage``: the name with
    ``_``; :data:`TERM_NAMES`), positionally in the registry's order. Frozen, like a
    dataclass. Greedy decoding and sampling use none."""

    __slots__ = ("_weights",)
    _weights: dict[str, float]  # term name -> weight

    def __init__(self, *weights: float, **named: float) -> None:
        fields = list(TERM_NAMES.values())
        if len(weights) > len(fields):
            raise TypeError(f"Terms takes at most {len(fields)} weights, got {len(weights)}")
        given = dict(zip(fields, weights, strict=False))
        for field, value in named.items():
            if field not in fields or field in given:
                raise TypeError(f"Terms: unknown or repeated ranking term {field!r}")
            given[field] = value
        values = {}
        for name, term in RANKING_TERMS.items():
            value = given.get(TERM_NAMES[name], term.default)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"the weight of {name} must be a finite number >= 0: {value}")
            values[name] = value
        object.__setattr__(self, "_weights", values)

    def __getattr__(self, field: str) -> float:
        name = field.replace("_", "-")
        if field.startswith("_") or name not in RANKING_TERMS:
            raise AttributeError(field)
        return self._weights[name]

    def __setattr__(self, field: str, value: object) -> None:
        raise AttributeError("Terms are frozen: make new ones (Terms(...), without)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Terms) and self._weights == other._weights

    def __hash__(self) -> int:
        return hash(tuple(self._weights.items()))

    def __repr__(self) -> str:
        weights = ", ".join(f"{TERM_NAMES[n]}={w!r}" for n, w in self._weights.items())
        return f"Terms({weights})"

    def __reduce__(self) -> tuple[type[Terms], tuple[float, ...]]:
        return Terms, tuple(self._weights.values())

    def weight(self, name: str) -> float:
        """The weight of the ranking term ``name`` (as ``--no-step`` writes it)."""
        return self._weights[name]

    @classmethod
    def none(cls) -> Terms:
        """No ranking term: beam search ranks by the model's length-normalised log-prob."""
        return cls(*(0.0 for _ in RANKING_TERMS))

    def without(self, names: Iterable[str]) -> Terms:
        """These weights with the named terms off."""
        off = {TERM_NAMES[n]: 0.0 for n in names}
        return Terms(**{**{TERM_NAMES[n]: w for n, w in self._weights.items()}, **off})

    def to_dict(self) -> dict[str, float]:
        return dict(self._weights)
