"""What each ranking term and the text steps cost in time, and buy in BLEU, on FLORES dev.

    python -m bench.heuristics [--model-dir DIR] [--limit N] [--threads 2]

Translates FLORES dev (``../shared/data/dev``) with the translator's default decoding (beam 4),
then with each ranking term off in turn, then with none, and reports seconds, ms a sentence
and BLEU/chrF for each. The text steps' share is the time of ``translate`` less the time of
decoding the same source ids directly (``translate_ids``, no steps). Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.data.corpus import read_pairs
from attenzione.evaluation import corpus_scores
from attenzione.search.registry import Terms, switches
from attenzione.translator.translator import Translator
from bench.report import write
from bench.shipped import FLORES


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.heuristics", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--flores", type=Path, default=FLORES)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=Path("bench/heuristics.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = [(p[0], p[1]) for p in read_pairs(args.flores)][: args.limit]
    sources, refs = [s for s, _ in pairs], [t for _, t in pairs]
    tr = Translator.from_pretrained(args.model_dir)
    tr.translate(sources[:8])  # warm-up
    default = tr.terms
    runs: dict[str, Terms] = {"default": default}
    for name in switches():
        if default[name] > 0:
            runs[f"without {name}"] = default.without([name])
    runs["no ranking term"] = Terms.none()
    results: dict[str, Any] = {}
    for label, terms in runs.items():
        start = time.perf_counter()
        hyps = [t.text for t in tr.translate(sources, terms=terms)]
        seconds = time.perf_counter() - start
        s = corpus_scores(hyps, refs)
        results[label] = {
            "seconds": seconds,
            "ms_per_sentence": 1000 * seconds / len(sources),
            "bleu": s.bleu,
            "chrf": s.chrf,
        }
        print(f"{label:>32}: {seconds:6.1f} s  BLEU {s.bleu:.2f}  chrF {s.chrf:.2f}", flush=True)
    ids = [tr.encode_source(s) for s in sources]
    start = time.perf_counter()
    tr.translate_ids(ids)
    decode_only = time.perf_counter() - start
    steps = results["default"]["seconds"] - decode_only
    results["text steps"] = {"seconds": steps, "ms_per_sentence": 1000 * steps / len(sources)}
    print(
        f"{'text steps':>32}: {steps:6.1f} s ({decode_only:.1f} s of decoding the same ids "
        "with the default terms, no steps)"
    )
    write(args.json, args.model_dir, args.threads, sentences=len(sources), results=results)


if __name__ == "__main__":
    main()
