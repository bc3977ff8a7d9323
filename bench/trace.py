"""The player's costs: ``POST /trace`` (and issue 67's ``/journey``, ``/training`` and
``/occlusion``) from ``attenzione serve``, and the page's weight.

    python -m bench.trace                      # writes bench/trace.json
    python -m bench.trace --repeats 5 --beam 1

What it does, in one run on one machine: starts ``attenzione serve`` (the shipped en→it model,
2 threads) on 127.0.0.1, sends a 25-word sentence to ``/trace`` (beam 4, then greedy, then with
``explain``) ``--repeats`` times each after one warm-up, and reports the median and the worst
wall time per request and the answer's size; then fetches the page at ``/`` and reports its
size (HTML with its inline CSS and JavaScript, no data), and the size of the static
``attention.html`` that ``attenzione attention --trace`` writes, without its embedded data.
Then the same for one token's journey (token 12; the translation beam 4, as the page asks),
the training view of a reference (with a padded batch's masks) and the occlusion of each word.
Targets: a beam-4 trace of a 25-word sentence under 1.5 s on 2 cores (issue 66), a journey
under 1 s (issue 67); the page under 150 KB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

SENTENCE = (
    "The transformer architecture, which was introduced by a team of researchers in 2017, "
    "has changed the way that machines translate text between many different languages."
)
REFERENCE = (
    "L'architettura Transformer, introdotta da un gruppo di ricercatori nel 2017, ha cambiato "
    "il modo in cui le macchine traducono i testi tra molte lingue diverse."
)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict[str, Any]) -> tuple[float, int]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        size = len(r.read())
    return time.perf_counter() - start, size


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=Path("bench/trace.json"))
    args = ap.parse_args(argv)
    words = len(SENTENCE.split())
    port = _port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, "-m", "attenzione", "serve", "--port", str(port)]
    cmd += ["--threads", str(args.threads), "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    results: dict[str, Any] = {
        "machine": platform.processor() or platform.machine(),
        "threads": args.threads,
        "sentence_words": words,
    }
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=5).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("attenzione serve did not start") from None
                time.sleep(0.3)
        base = {"q": SENTENCE, "source": "en", "target": "it"}
        for name, (path, extra) in {
            "beam4": ("/trace", {"beam": 4}),
            "greedy": ("/trace", {"beam": 1}),
            "beam4_explain": ("/trace", {"beam": 4, "explain": True}),
            "journey": ("/journey", {"beam": 4, "token": 12}),
            "training": ("/training", {"reference": REFERENCE}),
            "occlusion": ("/occlusion", {"beam": 4}),
        }.items():
            _post(url + path, {**base, **extra})  # warm-up
            times, size = [], 0
            for _ in range(args.repeats):
                took, size = _post(url + path, {**base, **extra})
                times.append(took)
            results[name] = {
                "median_s": round(statistics.median(times), 3),
                "max_s": round(max(times), 3),
                "answer_kb": round(size / 1024, 1),
            }
            got = results[name]
            print(
                f"{path:10s} {name:14s} median {got['median_s']:.3f} s, max {got['max_s']:.3f} s, "
                f"answer {got['answer_kb']} KB"
            )
        page = urllib.request.urlopen(url + "/", timeout=30).read()
        results["page_kb"] = round(len(page) / 1024, 1)
        print(f"page at /: {results['page_kb']} KB")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    from attenzione.translator.translator import Translator
    from attenzione.viz.html import render_html

    tr = Translator.from_pretrained()
    made = tr.trace("The transformer architecture was introduced in 2017.")
    empty = render_html(made.maps, trace=None)
    data_len = len(json.dumps(made.maps.to_dict(), ensure_ascii=False, separators=(",", ":")))
    results["static_page_kb_without_data"] = round((len(empty.encode()) - data_len) / 1024, 1)
    print(f"attention.html without its data: {results['static_page_kb_without_data']} KB")
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
