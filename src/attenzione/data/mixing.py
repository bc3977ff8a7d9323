"""Several corpora in one run: each named with a weight, mixed into one training set.

A weight says how many times a corpus's pairs appear in one epoch: ``2`` repeats every pair
twice (upsampling a small in-domain corpus), ``0.5`` keeps a seeded random half (damping a
huge, narrow one), ``1.5`` keeps every pair once and a seeded half of them twice. Weighting
by repetition, not by sampling with replacement, means an epoch of a weight-1 corpus sees
each pair exactly once, as a single-corpus run does.

On the command line a corpus is ``PATH``, ``PATH:WEIGHT`` or ``PATH:WEIGHT:TAG`` (``--data
tatoeba.tsv --data debian.tsv.gz:0.5 --data europarl.tsv.gz:1:lc``). A tag names the kind of
text the corpus is (Kobus et al. 2017): it is put before each of its sources as a reserved
token (:func:`tagged`), so that one model keeps the styles of its corpora apart and
translation can ask for one (``--tag``) or, by default, for none.

Numbers are also where an NMT model most visibly fails ("2017" → "20177"):
:func:`augment_numbers` adds copies of pairs whose numbers appear identically on both sides
with those numbers replaced by random ones, so the model learns that a number is copied
digit by digit rather than recalled as a familiar string.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from attenzione.data.numbers import NUMBER
from attenzione.data.tokenizers import TAG_NAME, tag_piece

Pair = tuple[str, str]


# How a tagged source is written in a run's train.tsv: the tag's token, then the text.
TAG_MARK = re.compile(r"<tag:([A-Za-z][A-Za-z0-9-]{0,31})> ")


def tagged(text: str, tag: str | None) -> str:
    """A source as a run stores it: with its corpus tag's token before it (or as it is)."""
    return text if tag is None else f"{tag_piece(tag)} {text}"


def split_tag(text: str) -> tuple[str | None, str]:
    """(tag, text) of a source as a run stores it (tag None: untagged)."""
    m = TAG_MARK.match(text)
    return (m.group(1), text[m.end() :]) if m else (None, text)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class CorpusSpec:
    """One corpus of a run: where it is, its weight, its tag (None: untagged), and a short
    name for reports."""

    path: str
    weight: float = 1.0
    tag: str | None = None

    @property
    def name(self) -> str:
        base = Path(self.path).name
        for suffix in (".gz", ".tsv", ".txt"):
            base = base.removesuffix(suffix)
        return base

    @classmethod
    def parse(cls, text: str) -> CorpusSpec:
        """``PATH``, ``PATH:WEIGHT`` or ``PATH:WEIGHT:TAG``; a path that itself ends in
        ``:digits`` still works."""
        head, sep, last = text.rpartition(":")
        if sep and head and not Path(text).exists() and not _number(last):
            if not TAG_NAME.fullmatch(last):
                raise ValueError(
                    f"corpus tag must be a name of letters, digits and hyphens starting with "
                    f"a letter, got {last!r} in {text!r}"
                )
            spec = cls.parse(head)
            if ":" not in head.removeprefix(spec.path) and spec.path == head:
                raise ValueError(f"a corpus tag comes after a weight: {head}:1:{last}")
            return cls(spec.path, spec.weight, last)
        path, sep, tail = text.rpartition(":")
        if sep and path and not Path(text).exists():
            try:
                weight = float(tail)
            except ValueError:
                return cls(text)
            if not weight > 0 or weight != weight or weight == float("inf"):
                raise ValueError(
                    f"corpus weight must be a positive number, got {tail!r} in {text!r}"
                )
            return cls(path, weight)
        return cls(text)

    def __str__(self) -> str:
        if self.tag is not None:
            return f"{self.path}:{self.weight:g}:{self.tag}"
        return self.path if self.weight == 1.0 else f"{self.path}:{self.weight:g}"


def apply_weight(pairs: list[Pair], weight: float, rng: random.Random) -> list[Pair]:
    """``floor(weight)`` copies of every pair plus a seeded ``frac(weight)`` share once more."""
    if weight <= 0:
        raise ValueError(f"weight must be > 0, got {weight}")
    whole = int(weight)
    frac = weight - whole
    out = pairs * whole
    if frac > 0:
        k = round(frac * len(pairs))
        out += [pairs[i] for i in sorted(rng.sample(range(len(pairs)), k))]
    return out


def _random_number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:  # a year
        return str(rng.randint(1000, 2099))
    if kind < 0.7:
        return str(rng.randint(0, 99))
    if kind < 0.9:
        return str(rng.randint(100, 999999))
    return f"{rng.randint(0, 999)}-{rng.randint(0, 9999):04d}"


def _renumber(text: str, mapping: dict[str, str]) -> str:
    return NUMBER.sub(lambda m: mapping[m.group(0)], text)


def augment_numbers(pairs: list[Pair], share: float, rng: random.Random) -> list[Pair]:
    """New pairs: a ``share`` of the pairs whose numbers match on both sides, renumbered.

    Only pairs where every number of the source appears identically in the target (so the
    replacement is consistent) are used; each of their numbers is replaced on both sides by
    the same random number. Returns only the new pairs.
    """
    if not 0 <= share <= 1:
        raise ValueError(f"share must be in [0, 1], got {share}")
    out: list[Pair] = []
    for src, tgt in pairs:
        nums = NUMBER.findall(src)
        if not nums or sorted(nums) != sorted(NUMBER.findall(tgt)) or rng.random() >= share:
            continue
        # dict.fromkeys, not set(): the order (and so the random draws) must not depend on
        # the interpreter's string hashing, or a rerun would build different data
        mapping = {n: _random_number(rng) for n in dict.fromkeys(nums)}
        out.append((_renumber(src, mapping), _renumber(tgt, mapping)))
    return out
