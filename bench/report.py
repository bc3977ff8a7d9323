"""Markdown tables from a bench results file (what docs/benchmarks.md shows).

    python -m bench.report [bench/results.json]

Prints one table of every workload and system, then the issue's targets as ratios measured
within that one run (ratios, not absolute figures, are what to compare across runs).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

SPEED_COLUMNS = (
    "attenzione",
    "attenzione bf16",
    "attenzione int8",
    "torch.nn",
    "marian",
    "ct2",
    "ct2-int8",
)


def write(path: Path, model_dir: Path | None, threads: int, **fields: Any) -> None:
    """Write a bench script's results to ``path`` as JSON: the model, threads and time of
    the run, then ``fields``; and say where."""
    record = {
        "model": str(model_dir or "shipped en-it"),
        "threads": threads,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        **fields,
    }
    path.write_text(json.dumps(record, indent=1))
    print(f"wrote {path}")


def _fmt(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def _by_workload(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["workload"]: r["values"] for r in results}


def speed_table(results: list[dict[str, Any]]) -> str:
    shown = [r for r in results if not r["workload"].startswith(("attention S=", "real-corpus"))]
    if not shown:
        return ""
    present = {name for r in shown for name in r["values"]}
    # the usual systems in their usual order, then any other (e.g. torch.compile); a system
    # with no figure in this run (bf16 skipped on a CPU without native bf16) gets no column
    columns = [c for c in SPEED_COLUMNS if c in present]
    columns += sorted(present - set(SPEED_COLUMNS))
    rows = [
        "| workload (unit) | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for r in shown:
        cells = [_fmt(r["values"].get(c)) for c in columns]
        rows.append(f"| {r['workload']} ({r['unit']}) | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def epoch_table(results: list[dict[str, Any]]) -> str:
    values = _by_workload(results).get("real-corpus epoch slice")
    if not values:
        return ""
    rows = ["| system and batching | target tokens/s |", "|---|---:|"]
    rows += [f"| {name} | {_fmt(v)} |" for name, v in values.items()]
    return "\n".join(rows)


def attention_table(results: list[dict[str, Any]]) -> str:
    rows = [
        "| S | math ms / MB | fused ms / MB | chunked ms / MB |",
        "|---:|---:|---:|---:|",
    ]
    for r in results:
        if not r["workload"].startswith("attention S="):
            continue
        s = r["workload"].split("=")[1]
        cells = [
            f"{r['values'][b]['ms']:.2f} / {r['values'][b]['peak_mb']:.0f}"
            for b in ("math", "fused", "chunked")
        ]
        rows.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else ""


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def targets(results: list[dict[str, Any]]) -> list[tuple[str, float | None, float]]:
    """(target, measured ratio, goal): higher is better for every ratio listed."""
    w = _by_workload(results)
    out: list[tuple[str, float | None, float]] = []

    def v(workload: str, system: str) -> float | None:
        return w.get(workload, {}).get(system)

    for label in ("64 pairs × 16 tokens", "lengths 4–24 padded to 24"):
        fp32 = f"training step, {label}, fp32"
        bf16 = f"training step, {label}, bf16 autocast"
        peers = [x for x in (v(fp32, "torch.nn"), v(fp32, "marian")) if x is not None]
        best = max(peers) if peers else None
        out.append(
            (
                f"training step ({label}), fp32 vs faster peer",
                _ratio(v(fp32, "attenzione"), best),
                1.25,
            )
        )
        out.append(
            (
                f"training step ({label}), bf16 vs faster peer's fp32",
                _ratio(v(bf16, "attenzione"), best),
                3.0,
            )
        )
    epoch = w.get("real-corpus epoch slice", {})
    out.append(
        (
            "real-corpus epoch, token budget bf16 vs torch.nn with batches of 64",
            _ratio(epoch.get("attenzione budget bf16"), epoch.get("torch.nn (64/batch)")),
            2.0,
        )
    )
    out.append(
        (
            "real-corpus epoch, token budget fp32 vs torch.nn with batches of 64",
            _ratio(epoch.get("attenzione budget fp32"), epoch.get("torch.nn (64/batch)")),
            2.0,
        )
    )
    g64 = "greedy decoding, batch 64, 12-token sources, 24 new tokens"
    g1 = "greedy decoding, batch 1, 24 new tokens"
    b4 = "beam 4, batch 32, 24 new tokens"
    for sys_ in ("attenzione", "attenzione int8"):
        out.append(
            (f"greedy batch 64, {sys_} vs marian", _ratio(v(g64, sys_), v(g64, "marian")), 1.5)
        )
        out.append(
            (f"greedy batch 64, {sys_} vs torch.nn", _ratio(v(g64, sys_), v(g64, "torch.nn")), 5.0)
        )
        # latency: goal is ≤ 0.5× Marian's, i.e. Marian's ms / ours ≥ 2
        out.append(
            (
                f"greedy batch 1, marian latency / {sys_} latency",
                _ratio(v(g1, "marian"), v(g1, sys_)),
                2.0,
            )
        )
        out.append(
            (f"beam 4 batch 32, {sys_} vs marian", _ratio(v(b4, sys_), v(b4, "marian")), 1.5)
        )
    out.append(
        (
            "greedy batch 64, attenzione packed vs ct2 (fp32; issue 41)",
            _ratio(v(g64, "attenzione packed"), v(g64, "ct2")),
            1.0,
        )
    )
    out.append(
        (
            "greedy batch 64, attenzione int8 vs ct2-int8",
            _ratio(v(g64, "attenzione int8"), v(g64, "ct2-int8")),
            0.5,
        )
    )
    out.append(
        (
            "greedy batch 1, ct2 latency / attenzione packed latency (issue 41: ≥ 0.8)",
            _ratio(v(g1, "ct2"), v(g1, "attenzione packed")),
            0.8,
        )
    )
    out.append(
        (
            "greedy batch 1, ct2-int8 latency / attenzione int8 latency",
            _ratio(v(g1, "ct2-int8"), v(g1, "attenzione int8")),
            0.5,
        )
    )
    a = w.get("attention S=8192")
    if a:
        # goal: chunked peak ≤ 25% of math, i.e. math / chunked ≥ 4
        out.append(
            (
                "attention S=8192, math peak MB / chunked peak MB",
                _ratio(a["math"]["peak_mb"], a["chunked"]["peak_mb"]),
                4.0,
            )
        )
    return out


def targets_table(results: list[dict[str, Any]]) -> str:
    rows = ["| target (ratio, higher is better) | measured | goal | met |", "|---|---:|---:|:---:|"]
    for name, got, goal in targets(results):
        met = "–" if got is None else ("yes" if got >= goal else "no")
        shown = "–" if got is None else f"{got:.2f}×"
        rows.append(f"| {name} | {shown} | ≥ {goal:g}× | {met} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "bench/results.json")
    data = json.loads(path.read_text())
    results = data["results"]
    # a markdown list, so the lines stay lines when pasted into docs/benchmarks.md
    print(
        f"- preset {data['preset']}, {data['threads']} threads, torch {data['torch']}, "
        f"{data['date']} ({data['seconds']} s)"
    )
    if "native_bf16" in data:
        bf16 = "native bf16" if data["native_bf16"] else "no native bf16: bf16 workloads skipped"
        if not data["native_bf16"] and any(
            "bf16" in r["workload"] or any("bf16" in name for name in r["values"]) for r in results
        ):
            bf16 = "no native bf16: bf16 rows are emulated"
        print(f"- CPU {data['machine']} ({data.get('cpu_capability', '?')}, {bf16})")
    if "note" in data:
        print(f"- {data['note']}")
    print()
    for part in (
        speed_table(results),
        epoch_table(results),
        attention_table(results),
        targets_table(results),
    ):
        if part:
            print(part + "\n")


if __name__ == "__main__":
    main()
