"""Choose the SentencePiece settings for the broad-data model by measurement.

Trains joint unigram models of several vocabulary sizes on a fixed sample of the training
corpora (Tatoeba + the Debian corpora) and reports, on FLORES dev and on Tatoeba sentences:
pieces per word on each side (fewer pieces = shorter sequences = faster training and
decoding, and words the model sees whole), the share of words kept as a single piece, how
many pieces fall back to bytes, and how a few probe words are split.

    python tools/tokenizer_study.py ../shared/data --sizes 8000 16000 24000 32000

Prints a markdown table; docs/tokenizer-study.md cites it.
"""

from __future__ import annotations

import argparse
import gzip
import random
import time
from pathlib import Path

from attenzione.data import SentencePieceTokenizer, normalize
from attenzione.data.tokenizers import is_byte_piece

PROBES = ["Hello.", "The transformer architecture was introduced in 2017.", "555-1234"]


def _read(path: Path, limit: int, rng: random.Random) -> list[tuple[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t")[:2] for line in f]
    rows = [r for r in rows if len(r) == 2]
    rng.shuffle(rows)
    return [(normalize(a), normalize(b)) for a, b in rows[:limit]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path, help="the shared data directory")
    ap.add_argument("--sizes", type=int, nargs="+", default=[8000, 16000, 24000, 32000])
    ap.add_argument("--per-corpus", type=int, default=40000)
    args = ap.parse_args()
    rng = random.Random(1)
    sample: list[tuple[str, str]] = _read(args.data / "en-it.train.tsv", 120000, rng)
    for f in sorted((args.data / "extra").glob("*.tsv.gz")):
        sample += _read(f, args.per_corpus, rng)
    texts = [s for s, _ in sample] + [t for _, t in sample]
    flores = _read(args.data / "dev" / "flores101-dev.eng-ita.tsv", 10**6, random.Random(0))
    tatoeba = sample[:2000]
    print(f"training sample: {len(sample)} pairs; FLORES dev {len(flores)}; Tatoeba {len(tatoeba)}")
    print()
    print(
        "| vocab | FLORES en pieces/word | FLORES it pieces/word | FLORES words whole "
        "| Tatoeba pieces/word | byte pieces (FLORES) | train s | probes |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    for size in args.sizes:
        t0 = time.perf_counter()
        tok = SentencePieceTokenizer.train(
            texts,
            vocab_size=size,
            seed=1,
            split_digits=True,
            byte_fallback=True,
            character_coverage=0.9999,
            num_threads=1,
        )
        secs = time.perf_counter() - t0

        def ppw(lines: list[str], tok: SentencePieceTokenizer = tok) -> float:
            pieces = sum(len(tok.encode(x)) for x in lines)
            words = sum(len(x.split()) for x in lines)
            return pieces / words

        words = [w for s, t in flores for w in (s + " " + t).split()]
        whole = sum(len(tok.encode(w)) == 1 for w in words) / len(words)
        byte_pieces = sum(
            is_byte_piece(tok.id_to_token(i)) for s, t in flores for i in tok.encode(s + t)
        )
        probes = " · ".join(
            " ".join(tok.id_to_token(i) for i in tok.encode(p)) for p in PROBES[:1] + PROBES[2:]
        )
        print(
            f"| {size} | {ppw([s for s, _ in flores]):.3f} | {ppw([t for _, t in flores]):.3f} "
            f"| {whole:.1%} | {ppw([s for s, _ in tatoeba] + [t for _, t in tatoeba]):.3f} "
            f"| {byte_pieces} | {secs:.0f} | {probes} |"
        )


if __name__ == "__main__":
    main()
