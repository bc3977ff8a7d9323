"""The shipped model itself translating real text: sentences/s and BLEU, per way of running it.

    python -m bench.shipped                       # the shipped en-it model, every variant
    python -m bench.shipped --variants plain,packed --flores-limit 200
    python -m bench.shipped --model-dir src/attenzione/pretrained/it-en --reverse

Workloads (each with the translator's default decoding: beam 4, the ranking terms, the text
steps — what ``attenzione translate`` does):

* FLORES dev (``../shared/data/dev``), all 997 sentences in one call (batched, 64 a batch):
  sentences/s, BLEU and chrF;
* a Tatoeba slice (the dev split a training run writes, ``--tatoeba``; skipped if absent):
  sentences/s, BLEU and chrF against every reference of a source;
* batch 1: the first ``--one-limit`` FLORES sentences, one call each: median ms a sentence;
* greedy, batched: FLORES dev with beam 1, sentences/s.

Variants: ``plain`` (fp32, unpacked linear layers: the path before packing), ``packed`` (fp32,
the default), ``int8``, ``bf16`` (weights in bf16: for CPUs with native bf16), and
``shortlist`` (packed + the model's vocabulary shortlist, if it ships one), and ``workers``
(packed, the batches decoded in two worker processes of one thread each: what ``attenzione
translate`` does with a long file; the workers load the model with the translator, untimed,
as every variant's loading is). The variants run one after another in one
process, 2 threads; run it on an idle machine and read the ratios between variants.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.config import search_config
from attenzione.data.corpus import read_pairs
from attenzione.evaluation import corpus_scores, group_references
from attenzione.translator.translator import Translator

VARIANTS = ("plain", "packed", "int8", "bf16", "shortlist", "workers")
FLORES = Path("../shared/data/dev/flores101-dev.eng-ita.tsv")
TATOEBA = Path("runs/prose/run/data/dev.tsv")


def load(model_dir: Path | None, variant: str) -> Translator:
    """The translator of one variant; only ``shortlist`` uses the model's shortlist."""
    shortlist = variant == "shortlist"
    if variant == "plain":
        tr = Translator.from_pretrained(model_dir, pack=False, shortlist=shortlist)
    elif variant in ("int8", "bf16"):
        tr = Translator.from_pretrained(model_dir, precision=variant, shortlist=shortlist)
    else:
        tr = Translator.from_pretrained(model_dir, shortlist=shortlist)
    if variant == "shortlist" and tr.shortlist is None:
        raise SystemExit(f"{model_dir or 'the shipped model'} ships no shortlist")
    if variant == "workers":
        from attenzione.translator.workers import Workers

        workers = Workers.of(tr, 2, threads=max(1, torch.get_num_threads() // 2))
        workers.wait()  # both loaded before anything is timed
        tr = tr.replace(workers=workers)
    return tr


def _pairs(path: Path, reverse: bool, limit: int | None) -> list[tuple[str, str]]:
    pairs = [(s, t) for s, t, *_ in read_pairs(path)]
    pairs = [(t, s) for s, t in pairs] if reverse else pairs
    return pairs[:limit] if limit else pairs


def _batched(tr: Translator, sources: list[str], refs: list[Any], beam: int) -> dict[str, float]:
    start = time.perf_counter()
    hyps = [t.text for t in tr.translate(sources, search=search_config(beam))]
    seconds = time.perf_counter() - start
    scores = corpus_scores(hyps, refs)
    return {
        "sentences_per_s": len(sources) / seconds,
        "seconds": seconds,
        "bleu": scores.bleu,
        "chrf": scores.chrf,
    }


def run_variant(
    tr: Translator,
    flores: list[tuple[str, str]],
    tatoeba: list[tuple[str, str]],
    one_limit: int,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tr.translate(flores[0][0])  # warm-up
    sources, refs = [s for s, _ in flores], [t for _, t in flores]
    out["flores"] = _batched(tr, sources, refs, 4)
    print(f"    FLORES dev, default decoding: {out['flores']}", flush=True)
    if tatoeba:
        srcs, grouped = group_references(tatoeba)
        out["tatoeba"] = _batched(tr, srcs, grouped, 4)
        print(f"    Tatoeba slice, default decoding: {out['tatoeba']}", flush=True)
    times = []
    for s in sources[:one_limit]:
        t0 = time.perf_counter()
        tr.translate(s)
        times.append(time.perf_counter() - t0)
    out["one_ms"] = 1000 * statistics.median(times)
    print(f"    batch 1, median ms a sentence: {out['one_ms']:.1f}", flush=True)
    out["greedy"] = _batched(tr, sources, refs, 1)
    print(f"    FLORES dev, greedy: {out['greedy']}", flush=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.shipped", description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", type=Path, help="default: the shipped en-it model")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--flores", type=Path, default=FLORES)
    ap.add_argument("--tatoeba", type=Path, default=TATOEBA)
    ap.add_argument("--reverse", action="store_true", help="read the files target→source")
    ap.add_argument("--flores-limit", type=int, default=None)
    ap.add_argument("--tatoeba-limit", type=int, default=1000)
    ap.add_argument("--one-limit", type=int, default=50, help="sentences timed one at a time")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=Path("bench/shipped.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}: choose from {VARIANTS}")
    if not args.flores.is_file():
        raise SystemExit(f"{args.flores} not found (FLORES dev is in ../shared/data/dev)")
    flores = _pairs(args.flores, args.reverse, args.flores_limit)
    tatoeba = []
    if args.tatoeba.is_file():
        tatoeba = _pairs(args.tatoeba, args.reverse, args.tatoeba_limit)
    else:
        print(f"(Tatoeba slice skipped: {args.tatoeba} not found)")
    results: dict[str, Any] = {}
    for v in variants:
        print(f"{v}:", flush=True)
        tr = load(args.model_dir, v)
        try:
            results[v] = run_variant(tr, flores, tatoeba, args.one_limit)
        finally:
            if tr.workers is not None:
                tr.workers.close()  # type: ignore[attr-defined]
    if "plain" in results:
        base = results["plain"]

        def ratio(r: dict[str, Any], key: str) -> float:
            return float(r[key]["sentences_per_s"] / base[key]["sentences_per_s"])

        for v, r in results.items():
            bleu = r["flores"]["bleu"] - base["flores"]["bleu"]
            print(
                f"{v:>10}: FLORES default {ratio(r, 'flores'):.2f}× (BLEU {bleu:+.2f}), "
                f"batch 1 {base['one_ms'] / r['one_ms']:.2f}×, greedy {ratio(r, 'greedy'):.2f}×"
            )
    args.json.write_text(
        json.dumps(
            {
                "model": str(args.model_dir or "shipped en-it"),
                "threads": args.threads,
                "torch": torch.__version__,
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "flores_sentences": len(flores),
                "tatoeba_sentences": len(group_references(tatoeba)[0]) if tatoeba else 0,
                "results": results,
            },
            indent=1,
        )
    )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
