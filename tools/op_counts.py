"""Count the work one version of the code does translating a fixed set: torch operations (by
name, with their CPU time) and Python calls — to compare two versions where timing is too
noisy to (issue 65's check: the same kernels run the same number of times).

    python tools/op_counts.py --out /tmp/after.json
    (cd /tmp/before && PYTHONPATH=src python tools/op_counts.py --out /tmp/before.json)
    python tools/op_counts.py --compare /tmp/before.json /tmp/after.json

The shipped en-it model, the first 128 FLORES-101 dev sentences, the default decoding (beam
4, every ranking term and text step) in batches of 64. Counts are exact; CPU times are not.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLORES = ROOT.parent / "shared/data/dev/flores101-dev.eng-ita.tsv"


def count(out: Path, flores: Path, n: int) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from attenzione.translator import Translator

    torch.set_num_threads(2)
    with flores.open(encoding="utf-8") as f:
        texts = [line.split("\t")[0] for line in f][:n]
    tr = Translator.from_pretrained(None)
    tr.translate(texts[:8])  # the search tables built once, before counting
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        outs = [t.candidates[0].text for t in tr.translate(texts)]
    ops = {e.key: [e.count, e.self_cpu_time_total / 1e3] for e in prof.key_averages()}
    calls = cProfile.Profile()
    calls.runcall(tr.translate, texts)
    total = sum(v[1] for v in pstats.Stats(calls).stats.values())  # type: ignore[attr-defined]
    out.write_text(json.dumps({"ops": ops, "python_calls": total, "translations": outs}))
    print(f"{out}: {sum(c for c, _ in ops.values())} torch operations, {total} Python calls")


def compare(a: Path, b: Path) -> None:
    before, after = json.loads(a.read_text()), json.loads(b.read_text())
    print("same translations:", before["translations"] == after["translations"])
    print(f"Python calls: {before['python_calls']} -> {after['python_calls']}")
    names = set(before["ops"]) | set(after["ops"])
    rows = [(k, before["ops"].get(k, [0, 0.0]), after["ops"].get(k, [0, 0.0])) for k in names]
    rows.sort(key=lambda r: -max(r[1][1], r[2][1]))
    for name, (n0, t0), (n1, t1) in rows[:20]:
        print(f"  {name:48s} {n0:7d} -> {n1:7d} calls   {t0:8.1f} -> {t1:8.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--flores", type=Path, default=FLORES)
    ap.add_argument("--limit", type=int, default=128)
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.out:
        count(args.out, args.flores, args.limit)
    else:
        ap.error("give --out FILE or --compare BEFORE AFTER")


if __name__ == "__main__":
    main()
