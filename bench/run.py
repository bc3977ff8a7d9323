"""Side-by-side speed: attenzione vs torch.nn.Transformer, HF MarianMT and CTranslate2.

All systems are built at the same size in one process; each workload runs every system
round-robin (the order rotates each repeat) after warm-up, and reports the median. Absolute
figures drift on a shared machine; the ratios within one run are what to read.

    python -m bench                      # everything, preset small, 2 threads
    python -m bench --only train,decode  # a subset
    python -m bench --quick              # fewer repeats (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attenzione.model.fast.precision import native_bf16
from bench.systems import (
    BOS,
    CT2,
    EOS,
    PAD,
    PRESETS,
    Attenzione,
    Dims,
    Marian,
    System,
    TorchNN,
    dims_of,
)

RESULTS: list[dict[str, Any]] = []


def _median_time(fn: Callable[[], Any], repeats: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _interleaved(jobs: dict[str, Callable[[], Any]], repeats: int, warmup: int) -> dict[str, float]:
    """Median seconds per call of each job, the jobs run round-robin in rotating order."""
    for fn in jobs.values():
        for _ in range(warmup):
            fn()
    names = list(jobs)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            t0 = time.perf_counter()
            jobs[n]()
            times[n].append(time.perf_counter() - t0)
    return {n: statistics.median(ts) for n, ts in times.items()}


def _report(
    workload: str, unit: str, values: dict[str, float], higher_is_better: bool = True
) -> None:
    base = {n: v for n, v in values.items() if not n.startswith("attenzione")}
    print(f"\n{workload}  ({unit})")
    for name, v in values.items():
        extra = ""
        if name.startswith("attenzione") and base:
            ratios = []
            for other, ov in base.items():
                r = v / ov if higher_is_better else ov / v
                ratios.append(f"{r:.2f}× {other}")
            extra = "   " + ", ".join(ratios)
        print(f"  {name:<18} {v:>10.1f}{extra}")
    RESULTS.append({"workload": workload, "unit": unit, "values": values})


# ---------------------------------------------------------------------------- batches
def _ids(n: int, v: int, g: torch.Generator) -> Tensor:
    return torch.randint(4, v - 1, (n,), generator=g)


def fixed_batch(b: int, length: int, v: int, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, int]:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, v - 1, (b, length), generator=g)
    src[:, -1] = EOS
    tgt = torch.randint(4, v - 1, (b, length), generator=g)
    tgt_in = torch.cat([torch.full((b, 1), BOS), tgt[:, :-1]], dim=1)
    return src, tgt_in, tgt, b * length


def padded_batch(
    b: int, lo: int, hi: int, v: int, seed: int = 0
) -> tuple[Tensor, Tensor, Tensor, int]:
    """Source and target lengths uniform in [lo, hi], padded to hi (a fixed-shape batch)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.full((b, hi), PAD)
    tgt_in = torch.full((b, hi), PAD)
    tgt_out = torch.full((b, hi), PAD)
    n_tgt = 0
    for i in range(b):
        s = int(torch.randint(lo, hi + 1, (1,), generator=g))
        t = int(torch.randint(lo, hi + 1, (1,), generator=g))
        src[i, :s] = _ids(s, v, g)
        src[i, s - 1] = EOS
        y = _ids(t, v, g)
        tgt_in[i, 0] = BOS
        tgt_in[i, 1:t] = y[:-1]
        tgt_out[i, :t] = y
        n_tgt += t
    return src, tgt_in, tgt_out, n_tgt


def training_batches(d: Dims) -> list[tuple[str, tuple[Tensor, Tensor, Tensor, int]]]:
    """The two training-step workloads: fixed lengths, and mixed lengths padded to the longest."""
    return [
        ("64 pairs × 16 tokens", fixed_batch(64, 16, d.vocab)),
        ("lengths 4–24 padded to 24", padded_batch(64, 4, 24, d.vocab)),
    ]


# ---------------------------------------------------------------------------- workloads
def bench_train(
    systems: list[System], d: Dims, repeats: int, warmup: int, bf16_too: bool = True
) -> None:
    trainers = [s for s in systems if not isinstance(s, CT2)]
    for shape, (src, tgt_in, tgt_out, n_tgt) in training_batches(d):
        label = f"training step, {shape}"
        for bf16 in (False, True) if bf16_too else (False,):
            jobs = {
                s.name: (lambda s=s, a=src, b=tgt_in, c=tgt_out, h=bf16: s.train_step(a, b, c, h))
                for s in trainers
            }
            secs = _interleaved(jobs, repeats, warmup)
            tag = "bf16 autocast" if bf16 else "fp32"
            _report(f"{label}, {tag}", "target tokens/s", {n: n_tgt / t for n, t in secs.items()})


def bench_decode(
    systems: list[System], d: Dims, repeats: int, warmup: int, bf16_too: bool = True
) -> None:
    src64, _, _, _ = fixed_batch(64, 12, d.vocab, seed=1)
    src1 = src64[:1]
    att = next(s for s in systems if isinstance(s, Attenzione))
    fast = ("fp32", "bf16", "int8") if bf16_too else ("fp32", "int8")
    systems = [*systems, *(att.inference(p) for p in fast)]
    greedy: dict[str, Callable[[], Any]] = {
        s.name: (lambda s=s: s.greedy(src64, 24)) for s in systems
    }
    secs = _interleaved(greedy, max(3, repeats // 2), 1)
    _report(
        "greedy decoding, batch 64, 12-token sources, 24 new tokens",
        "sentences/s",
        {n: 64 / t for n, t in secs.items()},
    )
    one = {s.name: (lambda s=s: s.greedy(src1, 24)) for s in systems}
    secs = _interleaved(one, repeats * 4, warmup)
    _report(
        "greedy decoding, batch 1, 24 new tokens",
        "ms per sentence",
        {n: 1000 * t for n, t in secs.items()},
        higher_is_better=False,
    )
    src32 = src64[:32]
    beams = {
        s.name: (lambda s=s: s.beam(src32, 4, 24)) for s in systems if not isinstance(s, TorchNN)
    }
    secs = _interleaved(beams, max(3, repeats // 2), 1)
    _report("beam 4, batch 32, 24 new tokens", "sentences/s", {n: 32 / t for n, t in secs.items()})


def bench_compile(d: Dims, repeats: int, warmup: int) -> None:
    """attenzione's training step eager against ``torch.compile`` (inductor) of the same model."""
    eager = Attenzione(d)
    compiled = Attenzione(d)
    compiled.model.load_state_dict(eager.model.state_dict())
    compiled.model = torch.compile(compiled.model, dynamic=False)  # type: ignore[assignment]
    compiled.opt = torch.optim.Adam(compiled.model.parameters(), lr=1e-4)
    for label, (src, tgt_in, tgt_out, n_tgt) in training_batches(d):
        t0 = time.perf_counter()
        compiled.train_step(src, tgt_in, tgt_out, False)  # compiles
        print(f"\n(torch.compile: first step {time.perf_counter() - t0:.1f} s, {label})")
        jobs = {
            name: (lambda s=s, a=src, b=tgt_in, c=tgt_out: s.train_step(a, b, c, False))
            for name, s in (("attenzione", eager), ("torch.compile", compiled))
        }
        secs = _interleaved(jobs, repeats, warmup)
        _report(
            f"training step, {label}, fp32, eager vs torch.compile",
            "target tokens/s",
            {n: n_tgt / t for n, t in secs.items()},
        )


def _corpus_slice(path: Path, n: int, vocab: int, seed: int) -> list[tuple[list[int], list[int]]]:
    from attenzione.data import SentencePieceTokenizer
    from attenzione.data.corpus import read_pairs

    pairs = [(p[0], p[1]) for p in read_pairs(path)]
    rng = random.Random(seed)
    rng.shuffle(pairs)
    tok = SentencePieceTokenizer.train(
        [s for p in pairs[:40000] for s in p], vocab_size=vocab, num_threads=2
    )
    return [(tok.encode(s)[:60], tok.encode(t)[:60]) for s, t in pairs[:n]]


def bench_epoch(
    systems: list[System], d: Dims, data: Path, n: int, seed: int = 0, bf16_too: bool = True
) -> None:
    from attenzione.data.batching import TokenBudgetSampler, collate

    if not data.is_file():
        print(f"\n(epoch slice skipped: {data} not found)")
        return
    examples = _corpus_slice(data, n, d.vocab, seed)
    n_tgt = sum(len(t) + 1 for _, t in examples)
    budget = TokenBudgetSampler(
        [(len(s) + 1, len(t) + 1) for s, t in examples], max_tokens=2500, seed=seed
    )
    token_batches = [collate([examples[i] for i in idx]) for idx in budget]
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    fixed = [collate([examples[i] for i in order[j : j + 64]]) for j in range(0, len(order), 64)]

    def pad_ratio(batches: list[Any]) -> float:
        cells = sum(b.tgt_in.numel() + b.src_ids.numel() for b in batches)
        real = sum(b.n_src_tokens + b.n_tgt_tokens for b in batches)
        return 1 - real / cells

    print(
        f"\nreal-corpus slice: {len(examples)} pairs, {n_tgt} target tokens; padding "
        f"{pad_ratio(fixed):.1%} in batches of 64, {pad_ratio(token_batches):.1%} with the "
        f"token budget ({len(token_batches)} batches of ≤2500 tokens)"
    )
    jobs: dict[str, tuple[System, list[Any], bool]] = {}
    for s in systems:
        if isinstance(s, CT2):
            continue
        jobs[f"{s.name} (64/batch)"] = (s, fixed, False)
        if isinstance(s, Attenzione):
            jobs["attenzione budget fp32"] = (s, token_batches, False)
            if bf16_too:
                jobs["attenzione budget bf16"] = (s, token_batches, True)
    values = {}
    for name, (s, batches, bf16) in jobs.items():
        for b in batches[:3]:  # warm-up
            s.train_step(b.src_ids, b.tgt_in, b.tgt_out, bf16)
        t0 = time.perf_counter()
        for b in batches:
            s.train_step(b.src_ids, b.tgt_in, b.tgt_out, bf16)
        values[name] = n_tgt / (time.perf_counter() - t0)
        print(f"  {name:<28} {values[name]:>8.0f} target tokens/s", flush=True)
    RESULTS.append(
        {"workload": "real-corpus epoch slice", "unit": "target tokens/s", "values": values}
    )
    base = values.get("torch.nn (64/batch)")
    if base:
        for name, v in values.items():
            if name.startswith("attenzione"):
                print(f"  {name}: {v / base:.2f}× torch.nn with fixed batches")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="small")
    ap.add_argument(
        "--model-dir",
        type=Path,
        help="take the shape from a model directory's config.json (overrides --preset)",
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="3 repeats, 1 warm-up")
    ap.add_argument(
        "--only",
        default="train,decode,epoch,attention",
        help="comma-separated workloads: train, decode, epoch, attention, and compile "
        "(torch.compile of attenzione's training step; not in the default set)",
    )
    ap.add_argument("--data", type=Path, default=Path("../shared/data/en-it.train.tsv"))
    ap.add_argument("--epoch-pairs", type=int, default=3000)
    ap.add_argument("--json", type=Path, default=Path("bench/results.json"))
    ap.add_argument(
        "--bf16",
        choices=("auto", "yes", "no"),
        default="auto",
        help="bf16 workloads: auto = only where the CPU has native bf16 (emulated bf16 is slow)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats, args.warmup = 3, 1
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    d = dims_of(args.model_dir) if args.model_dir else PRESETS[args.preset]
    if args.model_dir:
        args.preset = str(args.model_dir)
    only = set(args.only.split(","))
    native = native_bf16()
    bf16_too = args.bf16 == "yes" or (args.bf16 == "auto" and native)
    cpu = _cpu_name()
    print(f"preset {args.preset}: {d}; torch {torch.__version__}, {args.threads} threads")
    print(
        f"CPU: {cpu}; torch sees {torch.backends.cpu.get_cpu_capability()}, native bf16: "
        f"{'yes' if native else 'no'}; bf16 workloads {'on' if bf16_too else 'off'}"
    )
    systems: list[System] = []
    if only & {"train", "decode", "epoch"}:
        att, nn_, marian = Attenzione(d), TorchNN(d), Marian(d)
        systems = [att, nn_, marian]
        if "decode" in only:
            try:
                systems.append(CT2(marian, args.threads))
                systems.append(CT2(marian, args.threads, compute_type="int8"))
            except Exception as exc:  # noqa: BLE001 - the bench reports a missing peer
                print(f"(CTranslate2 unavailable: {exc})")
    started = time.time()
    if "train" in only:
        bench_train(systems, d, args.repeats, args.warmup, bf16_too)
    if "decode" in only:
        bench_decode(systems, d, args.repeats, args.warmup, bf16_too)
    if "epoch" in only:
        bench_epoch(systems, d, args.data, args.epoch_pairs, bf16_too=bf16_too)
    if "compile" in only:
        bench_compile(d, args.repeats, args.warmup)
    if "attention" in only:
        from bench.attention import bench_attention

        RESULTS.extend(bench_attention(args.threads))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "preset": args.preset,
                "dims": d.__dict__,
                "threads": args.threads,
                "torch": torch.__version__,
                "machine": cpu,
                "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                "native_bf16": native,
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "seconds": round(time.time() - started),
                "results": RESULTS,
            },
            indent=1,
        )
    )
    print(f"\nwrote {args.json}")
