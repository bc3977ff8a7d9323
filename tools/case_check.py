"""Did a model learn lower case? Count, over a dev set and a model's translations of it,
the translations written wholly in lower case where the source has a capital, those whose
first letter is lower-case where the source's is a capital, and the capitals written against
the reference's (issue 38: the lower-cased Europarl must teach vocabulary, not lower case).

    python tools/case_check.py DEV.tsv HYPS.txt [HYPS2.txt …]

HYPS are the files ``attenzione evaluate`` writes beside the data (``DEV.tsv.hyp.txt``).
"""

from __future__ import annotations

import sys

from attenzione.data import read_pairs


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    pairs = read_pairs(sys.argv[1])
    reference = sum(sum(c.isupper() for c in it) for _, it in pairs)
    print(f"{len(pairs)} pairs; capitals in the references: {reference}")
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            hyps = f.read().splitlines()
        if len(hyps) != len(pairs):
            sys.exit(f"error: {path} has {len(hyps)} lines for {len(pairs)} pairs")
        lower = sum(
            any(c.isupper() for c in en) and any(c.isalpha() for c in h) and h == h.lower()
            for (en, _), h in zip(pairs, hyps, strict=True)
        )
        first = sum(
            en[:1].isupper() and h[:1].islower() for (en, _), h in zip(pairs, hyps, strict=True)
        )
        capitals = sum(sum(c.isupper() for c in h) for h in hyps)
        print(
            f"{path}: all lower-case {lower}, first letter lower-case {first}, "
            f"capitals written {capitals}"
        )


if __name__ == "__main__":
    main()
