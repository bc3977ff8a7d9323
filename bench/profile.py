"""Where a greedy decoding step's time goes, by operator (``torch.profiler``).

    python -m bench.profile [--batch 1] [--no-pack] [--preset shipped | --model-dir DIR]

Random weights at the given shape, 12-token sources, 24 new tokens (as ``python -m bench``'s
decoding workloads); two warm-up runs, then one profiled run. Prints the operators by their own
CPU time, and the total per decoding step.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from attenzione.config import DecodeConfig
from attenzione.model.fast.precision import for_inference
from attenzione.search.decoding import generate
from bench.run import fixed_batch
from bench.systems import PRESETS, Attenzione, dims_of

NEW_TOKENS = 24


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="shipped")
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--no-pack", action="store_true", help="plain linear layers")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=15)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    d = dims_of(args.model_dir) if args.model_dir else PRESETS[args.preset]
    model = for_inference(Attenzione(d).model, "fp32", pack=not args.no_pack)
    src = fixed_batch(args.batch, 12, d.vocab, seed=1)[0]
    cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=NEW_TOKENS, min_len=NEW_TOKENS)
    for _ in range(2):
        generate(model, src, cfg)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        generate(model, src, cfg)
    events = prof.key_averages()
    print(events.table(sort_by="self_cpu_time_total", row_limit=args.rows))
    total_ms = sum(e.self_cpu_time_total for e in events) / 1000
    print(
        f"batch {args.batch}, {'plain' if args.no_pack else 'packed'}: {total_ms:.1f} ms for "
        f"{NEW_TOKENS} steps and the encoder ({total_ms / NEW_TOKENS:.2f} ms a step)"
    )


if __name__ == "__main__":
    main()
