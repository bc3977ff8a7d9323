"""CTranslate2 running *our* weights beside attenzione, on FLORES dev (issue 51, item 9).

    python -m bench.ctranslate2_ours                    # the shipped en-it model, 2 threads
    python -m bench.ctranslate2_ours --limit 20         # a smoke run
    python -m bench.ctranslate2_ours --model-dir DIR --threads 4 --json bench/ct2-ours.json

The model is exported with ``attenzione export --format ctranslate2`` (a ``TransformerSpec``
written with CTranslate2's spec API: the same network, its greedy translations identical to
ours, ``tests/test_export.py``), so the two engines decode the same function and the
comparison needs no random-weight stand-in. Workloads, each on the same sentences:

* greedy and beam 4, batched (64 sentences a batch, length-sorted by each engine) and batch 1
  (one sentence a call);
* attenzione as ``translate --raw`` (no text step, no ranking term; fp32, its packed layers:
  ``Translator.from_pretrained``'s default; its hard constraints — corpus tags, byte pieces,
  well-formed UTF-8, doubled marks — stay, they are part of its search), CTranslate2 float32
  with ``min_decoding_length=0`` (an empty translation allowed, as ours) and the corpus tags
  suppressed (as ours bans them), one translator thread pool of ``--threads`` threads
  (``inter_threads=1``), ``--int8`` adds CTranslate2 int8.

Reported: sentences/s (batch 1: median ms a sentence too), the target tokens each engine
wrote, and how many translations are identical to ours (greedy should be all but the few a
hard constraint changes; beam search ranks finished hypotheses a little differently: ours by
mean log-prob per token, CTranslate2 by log-prob / length^1, and stops differently). Timings
vary with the machine and what else runs: run it on an idle one and read the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.config import search_config
from attenzione.data.corpus import read_pairs
from attenzione.search.registry import Terms
from attenzione.translator.export import export
from attenzione.translator.translator import PRETRAINED_DIR, Translator

FLORES = Path("../shared/data/dev/flores101-dev.eng-ita.tsv")
BATCH = 64


class Ours:
    """attenzione as ``translate --raw``: token ids out."""

    name = "attenzione"

    def __init__(self, model_dir: Path) -> None:
        self.tr = Translator.from_pretrained(model_dir)

    def run(self, texts: list[str], beam: int, batch: int) -> list[list[int]]:
        out = self.tr.translate(
            texts, search=search_config(beam), steps=(), terms=Terms.none(), batch_size=batch
        )
        return [list(t.candidates[0].ids) for t in out]


class CT2:
    """The exported model in ``ctranslate2.Translator``: pieces in, ids out."""

    def __init__(self, path: Path, ours: Translator, threads: int, compute_type: str) -> None:
        import ctranslate2

        self.name = f"ctranslate2 {compute_type}"
        self.translator = ctranslate2.Translator(
            str(path),
            device="cpu",
            compute_type=compute_type,
            inter_threads=1,
            intra_threads=threads,
        )
        src, tgt = ours.src_tokenizer, ours.tgt_tokenizer
        self.src_pieces = [src.id_to_token(i) for i in range(src.vocab_size)]
        self.tgt_index = {tgt.id_to_token(i): i for i in range(tgt.vocab_size)}
        self.encode = ours.encode_source  # the ids our reader gives, <eos> included
        self.suppress = [[f"<tag:{t}>"] for t in getattr(tgt, "tags", ())] or None

    def run(self, texts: list[str], beam: int, batch: int) -> list[list[int]]:
        # CTranslate2 appends <eos> itself (add_source_eos): the pieces without it
        tokens = [[self.src_pieces[i] for i in self.encode(t)[:-1]] for t in texts]
        found = self.translator.translate_batch(
            tokens,
            beam_size=beam,
            max_batch_size=batch,
            min_decoding_length=0,
            suppress_sequences=self.suppress,
        )
        return [[self.tgt_index[p] for p in r.hypotheses[0]] for r in found]


def measure(system: Any, texts: list[str], beam: int, batched: bool) -> dict[str, Any]:
    """Translate ``texts`` (all at once, or one a call) and time it."""
    system.run(texts[:2], beam, BATCH)  # warm-up
    if batched:
        start = time.perf_counter()
        ids = system.run(texts, beam, BATCH)
        seconds = time.perf_counter() - start
        each: list[float] = []
    else:
        ids, each = [], []
        for text in texts:
            start = time.perf_counter()
            ids += system.run([text], beam, 1)
            each.append(time.perf_counter() - start)
        seconds = sum(each)
    out = {
        "sentences_per_s": len(texts) / seconds,
        "seconds": seconds,
        "tokens": sum(map(len, ids)),
        "ids": ids,
    }
    if each:
        out["median_ms"] = 1000 * statistics.median(each)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.ctranslate2_ours", description=__doc__)
    ap.add_argument("--model-dir", type=Path, default=PRETRAINED_DIR)
    ap.add_argument("--flores", type=Path, default=FLORES)
    ap.add_argument("--limit", type=int, default=None, help="the first N sentences only")
    ap.add_argument("--one-limit", type=int, default=100, help="sentences timed one a call")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--int8", action="store_true", help="also CTranslate2 int8")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not args.flores.is_file():
        raise SystemExit(f"{args.flores} not found (FLORES dev is in ../shared/data/dev)")
    texts = [s for s, *_ in read_pairs(args.flores)][: args.limit]
    ours = Ours(args.model_dir)
    with tempfile.TemporaryDirectory(prefix="bench-ct2-ours-") as tmp:
        path = export(args.model_dir, "ctranslate2", Path(tmp) / "ct2")
        systems: list[Any] = [ours, CT2(path, ours.tr, args.threads, "float32")]
        if args.int8:
            systems.append(CT2(path, ours.tr, args.threads, "int8"))
        results: dict[str, Any] = {}
        for beam in (1, 4):
            for batched in (True, False):
                work = (
                    f"{'greedy' if beam == 1 else 'beam 4'}, {'batched' if batched else 'batch 1'}"
                )
                sample = texts if batched else texts[: args.one_limit]
                print(f"{work} ({len(sample)} sentences):", flush=True)
                rows = {s.name: measure(s, sample, beam, batched) for s in systems}
                base = rows[ours.name]
                for name, r in rows.items():
                    same = sum(a == b for a, b in zip(r["ids"], base["ids"], strict=True))
                    r["identical_to_ours"] = same
                    ms = f", median {r['median_ms']:.1f} ms" if "median_ms" in r else ""
                    print(
                        f"  {name:>22}: {r['sentences_per_s']:7.1f} sentences/s{ms}, "
                        f"{r['tokens']} tokens, {same}/{len(sample)} identical to ours, "
                        f"{r['sentences_per_s'] / base['sentences_per_s']:.2f}×",
                        flush=True,
                    )
                results[work] = {
                    n: {k: v for k, v in r.items() if k != "ids"} for n, r in rows.items()
                }
    if args.json:
        meta = {"threads": args.threads, "sentences": len(texts), "model": str(args.model_dir)}
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
