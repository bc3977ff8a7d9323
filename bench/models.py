"""Two models in one service: one worker that knows each sentence's model, or one per model?

    python -m bench.models                      # the installed en-it and it-en models
    python -m bench.models --model A --model B --clients 8 --requests 96

Mixed traffic: ``--clients`` threads each send one-sentence requests, alternating between
the two models (a chat server reading and answering), each waiting for its answer before the
next; sentences/s and latency p50/p95 for

* **shared**: one :class:`~attenzione.serve.batcher.Batcher` holding both models (what
  ``attenzione serve`` does): a batch holds one model's sentences, the oldest waiting first;
* **per model**: one Batcher per model, each with its own worker thread: two decodes can run
  at once, each spreading over the same torch threads.

It also prints the process's resident memory after loading one model and after the second:
what a second model costs. Only this process; nothing goes over the network.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.serve.batcher import Batcher, Decoding, Route
from attenzione.translator.registry import find
from attenzione.translator.translator import Translator
from bench.serve import FALLBACK

SENTENCES = {
    "en": FALLBACK,
    "it": [
        "Dov'è la stazione dei treni?",
        "Ho fame.",
        "Il gatto dorme sul divano.",
        "Partiremo domani mattina.",
        "Legge un libro ogni settimana.",
        "Mio fratello vive a Roma.",
        "Puoi aiutarmi a portare queste scatole di sopra?",
        "Non ho mai visto un tramonto così bello.",
    ],
}


def rss_mb() -> float:
    """This process's resident memory, MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def drive(submit: Any, keys: list[str], texts: dict[str, list[str]], clients: int, requests: int):
    """``clients`` threads, ``requests`` in all, alternating models; latencies in seconds."""
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        while True:
            with lock:
                n = next(counter, None)
            if n is None:
                return
            key = keys[n % len(keys)]
            text = texts[key][(n // len(keys)) % len(texts[key])]
            start = time.perf_counter()
            (future,) = submit(key, text)
            future.result(timeout=300)
            with lock:
                latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", help="two model directories")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=96)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("models.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    paths = args.model or [find("en", "it").path, find("it", "en").path]
    before = rss_mb()
    routes: dict[str, Route] = {}
    memory = [round(before)]
    for path in paths:
        tr = Translator.from_pretrained(path)
        key = f"{tr.info.get('source_language', 'en')}-{tr.info.get('target_language', 'it')}"
        key = key if key not in routes else f"{key}#{len(routes)}"
        routes[key] = Route(tr)
        tr.translate(["Warm up."])
        memory.append(round(rss_mb()))
    keys = list(routes)
    texts = {k: SENTENCES.get(k.split("-")[0], SENTENCES["en"]) for k in keys}
    decoding = Decoding(beam=args.beam)
    results: dict[str, list[dict[str, float]]] = {"shared": [], "per model": []}
    for _ in range(args.rounds):
        for kind in results:
            if kind == "shared":
                one = Batcher(routes)
                batchers = {k: one for k in keys}
            else:
                batchers = {k: Batcher({k: routes[k]}) for k in keys}
            for b in set(batchers.values()):
                b.start()

            def submit(key: str, text: str, batchers: dict[str, Batcher] = batchers) -> Any:
                return batchers[key].submit([text], decoding, model=key)

            seconds, lat = drive(submit, keys, texts, args.clients, args.requests)
            for b in set(batchers.values()):
                b.stop()
            lat.sort()
            results[kind].append(
                {
                    "sentences_per_s": round(len(lat) / seconds, 2),
                    "p50_ms": round(1000 * statistics.median(lat), 1),
                    "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1),
                }
            )
            print(kind, results[kind][-1], flush=True)
    report = {
        "models": [str(p) for p in paths],
        "clients": args.clients,
        "requests": args.requests,
        "threads": args.threads,
        "beam": args.beam,
        "rss_mb": {"before": memory[0], "one model": memory[1], "two models": memory[-1]},
        "results": results,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report["rss_mb"]))


if __name__ == "__main__":
    main()
