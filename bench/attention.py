"""Attention micro-benchmark: the math, fused and chunked backends at S = 64 … 8192.

Each (backend, length) runs in a fresh process so its peak memory is its own: the peak
resident set size after the call minus the one before (q, k, v already allocated), read from
the process's own VmHWM. (``getrusage``'s ru_maxrss is no good here: Linux carries it across
``exec``, so a child of the large bench process inherits the parent's peak and reads 0.)
Forward only, B = 1, 4 heads of 64, fp32, self-attention with no mask.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

LENGTHS = (64, 256, 1024, 4096, 8192)
BACKENDS = ("math", "fused", "chunked")

_CHILD = r"""
import json, resource, statistics, sys, time
import torch

def peak_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux

from attenzione.model.fast.attention import scaled_dot_product_attention as sdpa
backend, s, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(1, 4, s, 64, generator=g) for _ in range(3))
with torch.inference_mode():
    sdpa(q[:, :, :8], k[:, :, :8], v[:, :, :8], kernel=backend)  # load kernels
    before = peak_kb()
    times = []
    for _ in range(3 if s >= 4096 else 7):
        t0 = time.perf_counter()
        out, _ = sdpa(q, k, v, kernel=backend)
        times.append(time.perf_counter() - t0)
    peak = peak_kb()
print(json.dumps({"ms": 1000 * statistics.median(times), "peak_mb": (peak - before) / 1024}))
"""


def measure(backend: str, s: int, threads: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, backend, str(s), str(threads)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def bench_attention(threads: int = 2) -> list[dict[str, Any]]:
    print("\nattention forward, B=1, 4 heads × 64, fp32: time (ms) / extra peak memory (MB)")
    print("  " + "S".rjust(6) + "".join(b.rjust(22) for b in BACKENDS))
    rows = []
    for s in LENGTHS:
        cells = {b: measure(b, s, threads) for b in BACKENDS}
        line = "".join(f"{c['ms']:>12.2f} / {c['peak_mb']:>6.0f}" for c in cells.values())
        print(f"  {s:>6}{line}", flush=True)
        rows.append({"workload": f"attention S={s}", "unit": "ms / MB", "values": cells})
    return rows
