"""Copy a trained checkpoint into the package as the shipped model, with its measured scores.

    python tools/ship_model.py RUN_DIR [--beam 4] [--dry-run]

Loads ``RUN_DIR/best``, scores it with beam search on the run's own held-out dev and test
splits (sacreBLEU BLEU and chrF), and writes ``src/attenzione/pretrained/en-it`` with fp16
weights, the tokenizers and an ``info.json`` carrying the scores, the training facts and the
data attribution. The figures in the README come from this script's output.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from attenzione.data import read_pairs
from attenzione.evaluation import corpus_scores, group_references
from attenzione.translator import PRETRAINED_DIR, Translator


def score(tr: Translator, pairs: list[tuple[str, str]], beam: int) -> dict[str, object]:
    """Line-by-line BLEU/chrF (the standard figure) and, beside it, multi-reference scores."""
    start = time.perf_counter()
    hyps = tr.translate([s for s, _ in pairs], beam=beam)
    seconds = time.perf_counter() - start
    s = corpus_scores(hyps, [t for _, t in pairs])
    # each distinct source once, against all its references (reusing the hypotheses above:
    # decoding is deterministic, so a repeated source has the same translation every time)
    first: dict[str, str] = {}
    for (src, _), hyp in zip(pairs, hyps, strict=True):
        first.setdefault(src, hyp)
    sources, refs = group_references(pairs)
    m = corpus_scores([first[src] for src in sources], refs)
    return {
        "bleu": round(s.bleu, 2),
        "chrf": round(s.chrf, 2),
        "sentences": s.n_sentences,
        "beam": beam,
        "seconds": round(seconds, 1),
        "signature": s.bleu_signature,
        "multi_ref": {
            "bleu": round(m.bleu, 2),
            "chrf": round(m.chrf, 2),
            "sources": m.n_sentences,
            "signature": m.bleu_signature,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--dry-run", action="store_true", help="score only, write nothing")
    args = parser.parse_args()
    tr = Translator.from_pretrained(args.run / args.checkpoint)
    results = {}
    for split in ("dev", "test"):
        pairs = read_pairs(args.run / "data" / f"{split}.tsv")
        results[split] = score(tr, pairs, args.beam)
        print(split, json.dumps(results[split]))
    if args.dry_run:
        return
    tr.info.update(
        {
            "dev_beam": results["dev"],
            "test_beam": results["test"],
            "source_run": str(args.run),
            "weights_dtype": "float16",
        }
    )
    tr.save_pretrained(PRETRAINED_DIR, dtype=torch.float16)
    shipped = Translator.from_pretrained()
    check = score(shipped, read_pairs(args.run / "data" / "dev.tsv"), args.beam)
    print("shipped (fp16 weights) dev", json.dumps(check))
    size = sum(p.stat().st_size for p in PRETRAINED_DIR.rglob("*") if p.is_file())
    print(f"wrote {PRETRAINED_DIR} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
