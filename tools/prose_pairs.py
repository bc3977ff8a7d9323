"""The prose among Debian's program messages, most Wikipedia-like first, for training.

    python tools/prose_pairs.py --general runs/ff3072/data/train.tsv --out DIR

Reads ``../shared/data/extra/debian-program-messages.en-it.tsv.gz`` (``--messages``) and keeps
the pairs that read as prose: 10 to 90 English words, no sign of code or markup on either
side (``% { } < > \\ _ = @ # | [ ] ~ ^ ` $ *``, a URL, a file suffix, a FUNCTION( call), an
English side that starts with a capital and ends a sentence; one pair per English sentence
(compared case-blind). It then ranks them as the twelfth session's selection did
(docs/broad-training.md): the mean, over a sentence's tokens, of log p_in − log p_general,
where p_in is Zipf over GloVe 6B's word order (its frequency in Wikipedia and Gigaword news)
and p_general the add-one unigram of the English sides of ``--general`` (a training mix, its
distinct lines) and of the kept pairs. Writes ``DIR/top10k.tsv`` (the first ``--top``,
10,000; the name follows it) and ``DIR/rest.tsv``.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import math
import re
from pathlib import Path

from attenzione.data.glove import load_packaged_glove

CODE = re.compile(r"[%{}<>\\_=@#|\[\]~^`$*]|https?:|www\.|\.\w{2,4}\b(?=\s|$)|\b[A-Z]{2,}\(")
TOKEN = re.compile(r"[a-z]+|\d+|[^\sa-z\d]")
MESSAGES = Path("../shared/data/extra/debian-program-messages.en-it.tsv.gz")


def prose(path: Path) -> list[str]:
    """The ``English<TAB>Italian`` lines of ``path`` that read as prose (see the module)."""
    kept, seen = [], set()
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            en, it = line.rstrip("\n").split("\t")
            if not 10 <= len(en.split()) <= 90 or CODE.search(en) or CODE.search(it):
                continue
            if not en[0].isupper() or en[-1] not in ".!?\"'":
                continue
            if en.lower() not in seen:
                seen.add(en.lower())
                kept.append(f"{en}\t{it}")
    return kept


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def ranked(lines: list[str], general: Path) -> list[str]:
    """``lines`` from the most to the least Wikipedia-like English side."""
    words = load_packaged_glove().words
    rank = {w: i for i, w in enumerate(words)}
    norm = sum(1.0 / (r + 10) for r in range(len(words)))
    counts: collections.Counter[str] = collections.Counter()
    seen = set()
    with general.open(encoding="utf-8") as f:
        for line in f:
            if line not in seen:
                seen.add(line)
                counts.update(tokens(line.split("\t", 1)[0]))
    for line in lines:
        counts.update(tokens(line.split("\t", 1)[0]))
    total, kinds = sum(counts.values()), len(counts)

    def score(line: str) -> float:
        toks = tokens(line.split("\t", 1)[0])
        gain = 0.0
        for w in toks:
            r = rank.get(w)
            p_in = (1.0 / (r + 10)) / norm if r is not None else 1e-8
            gain += math.log(p_in) - math.log((counts[w] + 1) / (total + kinds))
        return gain / len(toks)

    return sorted(lines, key=lambda line: -score(line))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=Path, default=MESSAGES)
    parser.add_argument("--general", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--top", type=int, default=10_000)
    args = parser.parse_args()
    lines = ranked(prose(args.messages), args.general)
    args.out.mkdir(parents=True, exist_ok=True)
    top = f"top{args.top // 1000}k.tsv" if args.top % 1000 == 0 else f"top{args.top}.tsv"
    for name, part in ((top, lines[: args.top]), ("rest.tsv", lines[args.top :])):
        (args.out / name).write_text("".join(f"{line}\n" for line in part), encoding="utf-8")
        print(f"{args.out / name}: {len(part)} pairs")


if __name__ == "__main__":
    main()
