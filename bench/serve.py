"""``attenzione serve`` under load, against the offline batched rate of the same model.

    python -m bench.serve                         # 1, 8, 32 clients; writes bench/serve.json
    python -m bench.serve --requests 16 --clients 1,4 --sentences 32   # a quick smoke run

What it does, in one run on one machine:

1. **offline**: ``Translator.translate`` of every sentence the load will send, in batches of
   64 (sorted by length — the best case for batching), in this process, with the server's
   number of torch threads: the sentences/s a server could hope to approach;
2. **direct latency**: ``Translator.translate`` of one sentence at a time, the same sentences
   the single client sends: what a request costs without HTTP, queue or batching;
3. **the server**: ``attenzione serve`` as its own process on 127.0.0.1 (same model, threads,
   beam), then for 1, 8 and 32 concurrent clients a fixed number of requests (one real
   sentence each, from the Tatoeba corpus), each client on a keep-alive connection:
   requests/s, sentences/s, latency p50/p95/p99, errors, and the worker's batch sizes.

Targets (issue 13): at 32 clients ≥ 0.8× the offline sentences/s with zero errors; at one
client, the median latency within 10% of the direct call. The load is bounded (a fixed count
of requests, each with a timeout) and only ever goes to the loopback address.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.config import search_config
from attenzione.data.sentences import split_sentences
from attenzione.translator.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "en-it.train.tsv"
FALLBACK = [
    "Where is the train station?",
    "I am hungry.",
    "The cat is sleeping on the sofa.",
    "We will leave tomorrow morning.",
    "She reads a book every week.",
    "My brother lives in Rome.",
    "Can you help me carry these boxes upstairs?",
    "I have never seen such a beautiful sunset.",
]


def sentences(path: Path, n: int, seed: int) -> list[str]:
    """``n`` distinct English sentences of a Tatoeba TSV, drawn at random (seeded)."""
    if not path.is_file():
        print(f"{path} not found: using {len(FALLBACK)} built-in sentences", file=sys.stderr)
        return [FALLBACK[i % len(FALLBACK)] for i in range(n)]
    seen: dict[str, None] = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            en = line.split("\t", 1)[0].strip()
            # one sentence each, so that the server (which always splits) and the offline
            # call (which splits only over-long lines) do exactly the same work
            if 3 <= len(en.split()) <= 25 and len(split_sentences(en)) == 1:
                seen[en] = None
    pool = list(seen)
    random.Random(seed).shuffle(pool)
    return pool[:n]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, threads: int, beam: int, extra: list[str]) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    cmd = [sys.executable, "-m", "attenzione", "serve", "--port", str(port)]
    cmd += ["--threads", str(threads), "--beam", str(beam), "--log-level", "warning"]
    cmd += ["--char-limit", "-1", "--queue-size", "4096", *extra]
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            health(port)
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the server did not start")


def health(port: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health")
    data: dict[str, Any] = json.loads(conn.getresponse().read())
    conn.close()
    return data


def load(port: int, texts: list[str], clients: int) -> dict[str, Any]:
    """``len(texts)`` requests from ``clients`` threads, each its share in order."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    shares = [texts[i::clients] for i in range(clients)]

    def client(mine: list[str]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for text in mine:
            body = json.dumps({"q": text, "source": "en", "target": "it"})
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/translate", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                payload = resp.read()
                ok = resp.status == 200 and json.loads(payload).get("translatedText")
                err = None if ok else f"{resp.status} {payload[:100]!r}"
            except (OSError, http.client.HTTPException, ValueError) as exc:
                err = f"{type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            dt = time.perf_counter() - t0
            with lock:
                (errors.append(err) if err else latencies.append(dt))
        conn.close()

    before = health(port)["worker"]
    threads = [threading.Thread(target=client, args=(s,)) for s in shares]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    after = health(port)["worker"]
    batches = after["batches"] - before["batches"]
    sents = after["sentences"] - before["sentences"]
    return {
        "clients": clients,
        "requests": len(texts),
        "errors": len(errors),
        "error_examples": errors[:3],
        "seconds": round(wall, 3),
        "requests_per_s": round(len(latencies) / wall, 2),
        "sentences_per_s": round(sents / wall, 2),
        "p50_ms": round(1000 * percentile(latencies, 50), 1) if latencies else None,
        "p95_ms": round(1000 * percentile(latencies, 95), 1) if latencies else None,
        "p99_ms": round(1000 * percentile(latencies, 99), 1) if latencies else None,
        "batches": batches,
        "mean_batch": round(sents / batches, 2) if batches else 0,
        "worker_ms_per_batch": round(
            1000 * (after["busy_seconds"] - before["busy_seconds"]) / max(batches, 1), 1
        ),
    }


def one_request(conn: http.client.HTTPConnection, text: str) -> float:
    """Seconds for one /translate on a keep-alive connection (raises on a non-200)."""
    body = json.dumps({"q": text, "source": "en", "target": "it"})
    t0 = time.perf_counter()
    conn.request("POST", "/translate", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    if resp.status != 200:
        raise RuntimeError(f"status {resp.status}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--clients", default="1,8,32")
    ap.add_argument("--requests", type=int, default=0, help="per level (0: 48, 8 per client)")
    ap.add_argument("--rounds", type=int, default=3, help="offline + every level, repeated")
    ap.add_argument("--sentences", type=int, default=256, help="distinct sentences drawn")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wait-ms", type=float, default=None, help="the server's --batch-wait-ms")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "serve.json")
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    pool = sentences(args.data, args.sentences, args.seed)
    plan = {c: args.requests or max(48, 8 * c) for c in levels}

    torch.set_num_threads(args.threads)
    tr = Translator.from_pretrained()
    search = search_config(args.beam)
    tr.translate(pool[:16], search=search)  # warm-up
    big = [pool[i % len(pool)] for i in range(max(plan.values()))]
    single = [pool[i % len(pool)] for i in range(plan.get(1, 48))]
    port = free_port()
    extra = [] if args.wait_ms is None else ["--batch-wait-ms", str(args.wait_ms)]
    proc = start_server(port, args.threads, args.beam, extra)
    # The host's speed drifts (by 2x within a minute on this shared machine), so every
    # comparison is interleaved: direct and HTTP calls alternate sentence by sentence, and
    # each round measures the offline rate right before its loads.
    direct: list[float] = []
    via_http: list[float] = []
    rounds: list[dict[str, Any]] = []
    try:
        load(port, pool[:16], 4)  # warm-up
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for s in single:
            t0 = time.perf_counter()
            tr.translate([s], search=search)
            direct.append(time.perf_counter() - t0)
            via_http.append(one_request(conn, s))
        conn.close()
        for r in range(args.rounds):
            t0 = time.perf_counter()
            tr.translate(big, search=search, batch_size=64)
            offline = len(big) / (time.perf_counter() - t0)
            rows = []
            for c in levels:
                texts = single if c == 1 else [pool[i % len(pool)] for i in range(plan[c])]
                row = load(port, texts, c)
                row["vs_offline"] = round(row["sentences_per_s"] / offline, 3)
                rows.append(row)
            rounds.append({"offline_sentences_per_s": round(offline, 2), "load": rows})
            print(f"round {r}: offline {offline:.1f}/s; " + json.dumps(rows), file=sys.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    result = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "threads": args.threads,
        "beam": args.beam,
        "direct_p50_ms": round(1000 * statistics.median(direct), 1),
        "http_p50_ms": round(1000 * statistics.median(via_http), 1),
        "http_vs_direct_p50": round(statistics.median(via_http) / statistics.median(direct), 3),
        "rounds": rounds,
    }
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(report(result))


def report(r: dict[str, Any]) -> str:
    lines = [
        f"beam {r['beam']}, {r['threads']} threads, torch {r['torch']}, {r['when']}",
        f"one client, alternating with direct calls: HTTP p50 {r['http_p50_ms']} ms, direct "
        f"Translator.translate p50 {r['direct_p50_ms']} ms: {r['http_vs_direct_p50']:.2f}x",
        "",
        "| round | offline sentences/s | clients | requests | errors | req/s | sentences/s "
        "| × offline | p50 ms | p95 ms | p99 ms | mean batch |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i, rnd in enumerate(r["rounds"]):
        for x in rnd["load"]:
            lines.append(
                f"| {i} | {rnd['offline_sentences_per_s']} | {x['clients']} | {x['requests']} | "
                f"{x['errors']} | {x['requests_per_s']} | {x['sentences_per_s']} | "
                f"{x['vs_offline']:.2f} | {x['p50_ms']} | {x['p95_ms']} | {x['p99_ms']} | "
                f"{x['mean_batch']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
