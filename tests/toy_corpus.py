"""A small made-up English→Italian corpus for end-to-end tests.

Real enough to exercise everything (casing, punctuation, adjective order that differs
between the languages, repeated English sentences with several Italian variants) and small
enough that a tiny model learns it in a couple of hundred steps.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from attenzione.config import TrainConfig

NOUNS = {
    "cat": ("il", "gatto"),
    "dog": ("il", "cane"),
    "house": ("la", "casa"),
    "car": ("la", "macchina"),
    "book": ("il", "libro"),
    "train": ("il", "treno"),
}
ADJECTIVES = {"red": "rosso", "big": "grande", "old": "vecchio", "new": "nuovo"}
VERBS = {"is here": "è qui", "is there": "è lì", "is small": "è piccolo"}


def _agree(adj: str, article: str) -> str:
    if article == "la" and adj.endswith("o"):
        return adj[:-1] + "a"
    return adj


def toy_pairs(seed: int = 0) -> list[tuple[str, str]]:
    pairs = []
    for (noun, (art, noun_it)), (adj, adj_it), (verb, verb_it) in itertools.product(
        NOUNS.items(), ADJECTIVES.items(), VERBS.items()
    ):
        verb_it = verb_it.replace("piccolo", _agree("piccolo", art))
        en = f"The {adj} {noun} {verb}."
        it = f"{art.capitalize()} {noun_it} {_agree(adj_it, art)} {verb_it}."
        pairs.append((en, it))
        if verb == "is here":  # a second Italian variant of the same English sentence
            pairs.append((en, it.replace("è qui", "si trova qui")))
    random.Random(seed).shuffle(pairs)
    return pairs


def write_toy_corpus(path: Path, seed: int = 0) -> Path:
    path.write_text("".join(f"{en}\t{it}\n" for en, it in toy_pairs(seed)), encoding="utf-8")
    return path


def toy_train_config(corpus: Path, out: Path, **kw: object) -> TrainConfig:
    """A quick tiny-preset run on the toy corpus; ``kw`` overrides any field."""
    base: dict[str, object] = dict(
        data=str(corpus),
        out=str(out),
        preset="tiny",
        vocab_size=48,
        max_tokens=400,
        lr=3e-3,
        warmup_steps=30,
        dev_size=8,
        test_size=8,
        dev_bleu_sentences=8,
        eval_every=10_000,
        progress=False,
        seed=3,
        num_threads=1,
    )
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]
