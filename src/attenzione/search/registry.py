"""Everything that shapes the search, in one registry: hard constraints and ranking terms.

A constraint (:class:`~attenzione.search.hooks.Constraint`) masks what every search method may
write; a ranking term (:class:`~attenzione.search.hooks.Term`) changes how beam search ranks
its hypotheses. Both are declared the same way, with :func:`register`: a name (as ``--no-step``,
info.json and the service write it), a kind, a default weight (None: not a switch, on wherever
the model has what it needs), what it needs of the pair's language profiles
(:data:`attenzione.languages.REQUIREMENTS`) and of the model (``applies``, read off its
:class:`~attenzione.search.scoring.Scoring`), and a builder that makes a batch's hook from a
:class:`HookBatch` and the weight. :func:`hooks_for` builds a batch's hooks in the registry's
order — the constraints first, in the order they mask, then the terms — and then a user's own
hooks, in the order given (as Hugging Face's logits processors are passed to ``generate``).

========================  ==========  =========================================================
``start-token``           constraint  never ``<pad>`` where the decoder starts from it (Marian)
``corpus-tags``           constraint  never a corpus tag of a joint vocabulary
``doubled-marks``         switch 1    a mark twice in a row only where the source has it so
``byte-ban``              constraint  no byte piece the source was not spelled with
``well-formed-utf8``      constraint  byte pieces make whole UTF-8 characters
``whole-characters``      constraint  and spell only characters of the source
``prefix``                constraint  the request's target prefix, forced
``number-coverage``       term        per digit of the source's numbers not written
``punctuation-coverage``  term        per comma, semicolon, colon or bracket not written
``attention-coverage``    term        GNMT's coverage penalty of a finished translation
``word-check``            term        per word written that is neither known nor in the source
========================  ==========  =========================================================

:class:`Terms` is the mapping of every switch's name to its weight (0 = off): the terms' weights
and ``doubled-marks`` (on while above 0). This module imports no torch (the builders import the
mechanisms when they first run), so that the command line reads the names from here without
loading it (``attenzione translate --help``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal, Union

from attenzione.config import (
    ATTENTION_COVERAGE,
    NUMBER_COVERAGE,
    PUNCTUATION_COVERAGE,
    WORD_PENALTY,
    DecodeConfig,
)

if TYPE_CHECKING:
    from torch import Tensor

    from attenzione.search.hooks import Constraint, Hook, Term
    from attenzione.search.scoring import Scoring

Kind = Literal["constraint", "term"]


@dataclass
class HookBatch:
    """A batch as its hooks are made for it: the model's ``scoring`` (its tables), the (B,S)
    source ``ids``, each row's ``sources`` ids, the search's ``cfg`` and each row's forced
    target ``prefixes`` (empty: none). A user's own hook maker is given the same."""

    scoring: Scoring
    ids: Tensor
    sources: Sequence[Sequence[int]]
    cfg: DecodeConfig
    prefixes: Sequence[Sequence[int]] = ()

    @cached_property
    def symbols(self) -> Tensor:
        """(B,C) the digits and carried marks each source has (:meth:`Scoring.symbols`)."""
        return self.scoring.symbols(self.ids)

    @cached_property
    def table(self) -> Tensor:
        """(V,C) how many of each digit and carried mark every target piece writes."""
        return self.scoring.symbol_table.to(self.ids.device)


# what makes a batch's hook from its weight (None: nothing to do in this batch)
Builder = Callable[[HookBatch, float], "Hook | None"]
# a user's own hook: one object for every batch (its ``start`` sets it up for each), or what
# makes one from a batch (None: none for this batch)
UserHook = Union["Hook", Callable[[HookBatch], "Hook | None"]]


def _always(scoring: Scoring) -> bool:
    return True


@dataclass(frozen=True)
class Registered:
    """One hook of the registry (see the module docstring): ``name``, ``kind``, ``build``,
    ``default`` weight (None: not a switch), ``needs`` of the language profiles and whether
    a model ``applies`` it (has what it needs: byte pieces, a word list…)."""

    name: str
    kind: Kind
    build: Builder
    default: float | None = None
    needs: tuple[str, ...] = ()
    applies: Callable[[Scoring], bool] = _always


# every registered hook, in the order a batch gets them (each name -> its entry)
REGISTRY: dict[str, Registered] = {}


def register(
    name: str,
    kind: Kind,
    *,
    default: float | None = None,
    needs: tuple[str, ...] = (),
    applies: Callable[[Scoring], bool] = _always,
) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of the hook ``name``; with a
    ``default`` weight it is a switch (:class:`Terms`), which a pair's default pipeline has
    where its language profiles meet ``needs``."""
    if kind not in ("constraint", "term"):
        raise ValueError(f"a hook is a 'constraint' or a 'term', not {kind!r}")

    def add(build: Builder) -> Builder:
        if name in REGISTRY:
            raise ValueError(f"a hook named {name!r} is registered already")
        REGISTRY[name] = Registered(name, kind, build, default, needs, applies)
        return build

    return add


def switches() -> dict[str, Registered]:
    """The registered hooks a user can switch, by name, in the registry's order."""
    return {n: e for n, e in REGISTRY.items() if e.default is not None}


# ---------------------------------------------------------------------- the constraints
@register("start-token", "constraint", applies=lambda s: s.starts_from_pad)
def _start_token(batch: HookBatch, weight: float) -> Hook | None:
    """A decoder that starts from ``<pad>`` (Marian's) never writes it; masked after
    normalisation, as transformers' ``bad_words_ids`` does."""
    from attenzione.search.constraints import NeverNormalised

    c = batch.scoring.config
    return NeverNormalised([c.pad_id], c.eos_id)


@register("corpus-tags", "constraint", applies=lambda s: bool(s.tag_ids))
def _corpus_tags(batch: HookBatch, weight: float) -> Hook | None:
    """The corpus tags of a joint vocabulary are source tokens only, never written."""
    from attenzione.search.constraints import Never

    return Never(batch.scoring.tag_ids, batch.scoring.config.eos_id)


@register("doubled-marks", "constraint", default=1.0, applies=lambda s: bool(s.lone_marks[0]))
def _doubled_marks(batch: HookBatch, weight: float) -> Hook | None:
    """A punctuation mark twice in a row only where the source has it so (a rule while the
    weight is above 0, for every search method)."""
    from attenzione.search.constraints import NoDoubledMarks

    writes = batch.scoring.lone_marks[1].to(batch.ids.device)
    return NoDoubledMarks(writes, batch.scoring.doubled(batch.sources).to(batch.ids.device))


@register("byte-ban", "constraint", applies=lambda s: s.shares_bytes)
def _byte_ban(batch: HookBatch, weight: float) -> Hook | None:
    """No byte piece the sentence's source was not spelled with."""
    from attenzione.search.constraints import ByteBan

    return ByteBan(batch.scoring.byte_bans(batch.ids), batch.scoring.config.eos_id)


@register("well-formed-utf8", "constraint", applies=lambda s: s.utf8 is not None)
def _well_formed_utf8(batch: HookBatch, weight: float) -> Hook | None:
    """Byte pieces that always make well-formed UTF-8."""
    from attenzione.search.constraints import WellFormedUTF8

    assert batch.scoring.utf8 is not None
    return WellFormedUTF8(batch.scoring.utf8.to(batch.ids.device))


@register("whole-characters", "constraint", applies=lambda s: s.shares_bytes)
def _whole_characters(batch: HookBatch, weight: float) -> Hook | None:
    """Byte pieces that spell only whole characters of the source (None: no source of the
    batch spells one in bytes)."""
    return batch.scoring.whole_characters(batch.sources)


@register("prefix", "constraint")
def _prefix(batch: HookBatch, weight: float) -> Hook | None:
    """The target prefix a request forces on its rows (None: none in this batch)."""
    from attenzione.search.constraints import ForcedPrefix

    if not any(batch.prefixes):
        return None
    return ForcedPrefix(batch.prefixes)


# ---------------------------------------------------------------------- the ranking terms
@register("number-coverage", "term", default=NUMBER_COVERAGE)
def _number_coverage(batch: HookBatch, weight: float) -> Hook | None:
    """Per digit of the source's numbers not written (in the length-normalised score)."""
    from attenzione.search.scoring import DIGITS
    from attenzione.search.terms import SymbolCoverage

    digits = slice(None, len(DIGITS))
    return SymbolCoverage(batch.symbols[:, digits], batch.table[:, digits], weight)


@register(
    "punctuation-coverage",
    "term",
    default=PUNCTUATION_COVERAGE,
    needs=("same-comma-rules",),
    applies=lambda s: s.n_marks > 0,  # the target vocabulary writes some of the marks
)
def _punctuation_coverage(batch: HookBatch, weight: float) -> Hook | None:
    """Per comma, semicolon, colon or bracket of the source not written (CARRIED_MARKS)."""
    from attenzione.search.scoring import DIGITS
    from attenzione.search.terms import SymbolCoverage

    marks = slice(len(DIGITS), None)
    return SymbolCoverage(batch.symbols[:, marks], batch.table[:, marks], weight)


@register("attention-coverage", "term", default=ATTENTION_COVERAGE)
def _attention_coverage(batch: HookBatch, weight: float) -> Hook | None:
    """Times the attention coverage (≤ 0) of a finished translation."""
    from attenzione.search.terms import AttentionCoverage

    s, c = batch.scoring, batch.scoring.config
    return AttentionCoverage(batch.ids, s.attention_layer, weight, c.pad_id, c.eos_id)


@register(
    "word-check",
    "term",
    default=WORD_PENALTY,
    needs=("target-word-list",),
    applies=lambda s: s.known_words is not None,  # the model's word list
)
def _word_check(batch: HookBatch, weight: float) -> Hook | None:
    """Per word written that is neither known nor in the source (in total log-prob)."""
    from attenzione.search.terms import WordPenalty

    lexicon = batch.scoring.lexicon(batch.sources, weight)
    assert lexicon is not None
    return WordPenalty(lexicon, 2 * batch.cfg.beam_size, batch.ids.device)


# ---------------------------------------------------------------------- a batch's hooks
def hooks_for(
    batch: HookBatch, weights: Terms, own: Sequence[UserHook] = ()
) -> tuple[list[Constraint], list[Term]]:
    """The constraints and the ranking terms of ``batch``: the registered hooks the model
    applies (a switch only while its weight in ``weights`` is above 0; terms only for beam
    search), in the registry's order, then the user's ``own``."""
    from attenzione.search.hooks import Constraint, Term

    beam = batch.cfg.method == "beam"
    constraints: list[Constraint] = []
    terms: list[Term] = []
    for name, entry in REGISTRY.items():
        weight = 1.0 if entry.default is None else weights[name]
        if weight <= 0 or (entry.kind == "term" and not beam):
            continue
        if not entry.applies(batch.scoring):
            continue
        hook = entry.build(batch, weight)
        if hook is not None:
            (constraints if entry.kind == "constraint" else terms).append(hook)  # type: ignore[arg-type]
    for i, given in enumerate(own):
        hook = given if isinstance(given, Constraint | Term) else given(batch)  # type: ignore[operator]
        if isinstance(hook, Constraint):
            constraints.append(hook)
        elif isinstance(hook, Term):
            if beam:  # greedy decoding and sampling rank nothing
                terms.append(hook)
        elif hook is not None:
            raise TypeError(f"hook {i} made a {type(hook).__name__}, not a Constraint or a Term")
    return constraints, terms


# ---------------------------------------------------------------------- the weights
class Terms(Mapping[str, float]):
    """The weights of the switches of the registry (0 = off), name → weight: every ranking
    term's and ``doubled-marks``' (:func:`switches`), in the registry's order. Made from a
    mapping of some of them, or keywords with ``_`` for ``-`` (``Terms(number_coverage=0)``),
    the others at their default; frozen and hashable. Greedy
    decoding and sampling use no term (``doubled-marks`` holds for every method)."""

    __slots__ = ("_weights",)
    _weights: dict[str, float]

    def __init__(
        self, weights: Mapping[str, float] | Iterable[tuple[str, float]] = (), /, **named: float
    ) -> None:
        given = dict(weights)
        for field, weight in named.items():  # number_coverage=0.5: the name as Python spells it
            name = field.replace("_", "-")
            if name in given:
                raise ValueError(f"the weight of {name} is given twice")
            given[name] = weight
        known = switches()
        for name in given:
            if name not in known:
                raise ValueError(
                    f"unknown ranking term {name!r}: the switches are {', '.join(known)}"
                )
        values: dict[str, float] = {}
        for name, entry in known.items():
            value = given.get(name, entry.default)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"the weight of {name} must be a finite number >= 0: {value}")
            values[name] = value
        object.__setattr__(self, "_weights", values)

    def __getitem__(self, name: str) -> float:
        return self._weights[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._weights)

    def __len__(self) -> int:
        return len(self._weights)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Terms are frozen: make new ones (Terms({...}), without)")

    def __hash__(self) -> int:
        return hash(tuple(self._weights.items()))

    def __repr__(self) -> str:
        return f"Terms({self._weights!r})"

    def __reduce__(self) -> tuple[type[Terms], tuple[dict[str, float]]]:
        return Terms, (dict(self._weights),)

    @classmethod
    def none(cls) -> Terms:
        """Every switch off: beam search ranks by the model's length-normalised log-prob."""
        return cls(dict.fromkeys(switches(), 0.0))

    def without(self, names: Iterable[str]) -> Terms:
        """These weights with the named switches off."""
        return Terms({**self._weights, **dict.fromkeys(names, 0.0)})
