"""BLEU for the Multi30k recipe: ``python score.py [--text tok|raw] HYP REF [REF_RAW]``.

Prints the BLEU of ``HYP`` (the model's tokenized, lower-cased output, one line a sentence)
against ``REF_TOK`` exactly as the benchmark's papers compute it (sacreBLEU ``--tokenize none``:
the dataset's own Moses tokenization, lower-cased, like ``multi-bleu.perl``). With ``REF_RAW``
(the raw, cased reference, optionally .gz) it also prints sacreBLEU with its default 13a
tokenization against it, case-insensitively: the model is trained lower-cased, so a cased
score would only count its missing capitals. The hypothesis is first brought back towards raw
text (entities unescaped, punctuation re-attached), an approximation of Moses' detokenizer.

With ``--text raw`` (the recipe's cased variant: a model trained on the raw text) ``REF`` is
the raw reference and the one figure printed is sacreBLEU's default: 13a, cased.
"""

from __future__ import annotations

import gzip
import html
import re
import sys
from pathlib import Path

import sacrebleu


def read_lines(path: str) -> list[str]:
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def detokenize(line: str) -> str:
    """Moses-tokenized text back towards raw text (language-independent rules only)."""
    text = html.unescape(line).replace(" @-@ ", "-")
    text = re.sub(r" ([.,!?:;%)\]}])", r"\1", text)  # closing punctuation joins the word before
    text = re.sub(r"([(\[{]) ", r"\1", text)  # opening brackets join the word after
    return re.sub(r" (['’][^\W\d_]*)\b", r"\1", text)  # "man 's" → "man's", "l' homme" kept


def main(argv: list[str]) -> int:
    text = "tok"
    if argv[:1] == ["--text"] and len(argv) > 1:
        text, argv = argv[1], argv[2:]
    if text not in ("tok", "raw") or len(argv) not in (2, 3) or (text == "raw" and len(argv) != 2):
        print("usage: python score.py [--text tok|raw] HYP REF [REF_RAW]", file=sys.stderr)
        return 2
    hyps, refs = read_lines(argv[0]), read_lines(argv[1])
    if len(hyps) != len(refs):
        print(f"{argv[0]} has {len(hyps)} lines but {argv[1]} has {len(refs)}", file=sys.stderr)
        return 1
    if text == "raw":
        print(f"{sacrebleu.corpus_bleu(hyps, [refs]).score:.2f}")
        return 0
    tok = sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", force=True).score
    out = [f"{tok:.2f}"]
    if len(argv) == 3:
        raw = read_lines(argv[2])
        if len(raw) == len(hyps):
            detok = [detokenize(h) for h in hyps]
            out.append(
                f"{sacrebleu.corpus_bleu(detok, [raw], lowercase=True, force=True).score:.2f}"
            )
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
