"""Time a model directory's translation: one sentence, and the first 200 FLORES dev sentences.

    python tools/model_speed.py [MODEL_DIR] [--threads 2] [--flores PATH]

One sentence ("Where is the train station?") is translated once to warm up, then 10 times
with beam 4 and 10 times greedy; the medians are printed. Then the first 200 sentences of
FLORES dev are translated with beam 4 in one call. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attenzione.config import search_config
from attenzione.data import read_pairs
from attenzione.translator.translator import Translator

SENTENCE = "Where is the train station?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=None, help="default: the shipped model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--flores", default="../shared/data/dev/flores101-dev.eng-ita.tsv")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tr = Translator.from_pretrained(args.model)
    tr.translate(SENTENCE)
    for beam in (4, 1):
        times = []
        for _ in range(10):
            start = time.perf_counter()
            tr.translate(SENTENCE, search=search_config(beam))
            times.append(time.perf_counter() - start)
        print(f"beam {beam}: one sentence, median {1000 * statistics.median(times):.1f} ms")
    sources = [s for s, _ in read_pairs(args.flores)[:200]]
    start = time.perf_counter()
    tr.translate(sources, search=search_config(4))
    seconds = time.perf_counter() - start
    print(f"FLORES dev, first 200, beam 4: {seconds:.1f} s ({200 / seconds:.1f} sentences/s)")


if __name__ == "__main__":
    main()
