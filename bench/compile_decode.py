"""Greedy decoding with ``torch.compile`` of the decoder step, against eager and packed.

    python -m bench.compile_decode [--preset shipped] [--repeats 5]

Random weights at the preset's shape, 12-token sources, 24 new tokens, batch 1 and 64. The
compiled model is the plain fp32 one with ``Transformer.decode`` compiled by inductor with
dynamic shapes (the K/V cache grows a position a step); the first call's compile time is
printed, then the median of ``--repeats`` rounds, the three systems in turn.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from attenzione.config import DecodeConfig
from attenzione.model.fast.precision import for_inference
from attenzione.search.decoding import generate
from bench.run import fixed_batch
from bench.systems import PRESETS, Attenzione


class CompiledDecode:
    """A model whose ``decode`` is compiled; the rest is the model's own."""

    def __init__(self, model: Any) -> None:
        self.model, self.config = model, model.config
        self._decode = torch.compile(model.decode, dynamic=True)

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        return self.model.encode(*args, **kwargs)

    def init_cache(self, *args: Any, **kwargs: Any) -> Any:
        return self.model.init_cache(*args, **kwargs)

    def decode(self, *args: Any, **kwargs: Any) -> Any:
        return self._decode(*args, **kwargs)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.compile_decode")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="shipped")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    d = PRESETS[args.preset]
    base = Attenzione(d).model.eval()
    systems = {
        "eager": for_inference(base, "fp32", pack=False),
        "torch.compile": None,
        "packed": for_inference(base, "fp32"),
    }
    systems["torch.compile"] = CompiledDecode(systems["eager"])
    cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=24, min_len=24)
    src = fixed_batch(64, 12, d.vocab, seed=1)[0]
    for b in (1, 64):
        s = src[:b]
        start = time.perf_counter()
        out = generate(systems["torch.compile"], s, cfg)
        print(f"batch {b}: first compiled call {time.perf_counter() - start:.1f} s")
        same = [h[0].tokens for h in out] == [h[0].tokens for h in generate(base, s, cfg)]
        times: dict[str, list[float]] = {name: [] for name in systems}
        for _ in range(args.repeats):
            for name, model in systems.items():
                start = time.perf_counter()
                generate(model, s, cfg)
                times[name].append(time.perf_counter() - start)
        medians = ", ".join(f"{n} {1000 * statistics.median(t):.1f}" for n, t in times.items())
        print(f"batch {b} (same tokens compiled: {same}), ms: {medians}")


if __name__ == "__main__":
    main()
