"""Where the shipped model's default decoding spends its time, by part of the decoding loop.

    python -m bench.phases [--model-dir DIR] [--limit 320] [--rounds 2] [--threads 2]

Translates the first ``--limit`` FLORES dev sentences (``../shared/data/dev``) with the
translator's defaults (beam 4, ranking terms, text steps) and times each part of the loop in
:func:`attenzione.search.decoding.generate`: the network (``Transformer.encode`` and ``decode``),
the log-softmax, beam search's ranking (``BeamSearch.step``), each ranking term and constraint,
and the cache's reorder. Each part is timed by wrapping its method with a clock for the run
(the wrappers cost ~1 µs a call, the same for every part). Reports seconds per part, median
over the rounds, and the share of the whole. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from attenzione.data.corpus import read_pairs
from attenzione.model import transformer as model
from attenzione.model.fast.cache import FastKVCache
from attenzione.search import constraints, lexicon, strategies, terms
from attenzione.translator.translator import Translator
from bench.report import write
from bench.shipped import FLORES

# (label, owner, method): the parts of the loop that are timed
PARTS: list[tuple[str, Any, str]] = [
    ("network: encoder", model.Transformer, "encode"),
    ("network: decoder step", model.Transformer, "decode"),
    ("log-softmax", torch, "log_softmax"),
    ("beam search's ranking", strategies.BeamSearch, "step"),
    ("  of which: finishing hypotheses", strategies.BeamSearch, "_finish"),
    ("cache reorder", FastKVCache, "reorder"),
    ("word check", lexicon.WordCheck, "penalty"),
    ("word check: advance", lexicon.WordCheck, "advance"),
    ("attention coverage", terms.AttentionCoverage, "charge"),
    ("attention coverage: reorder", terms.AttentionCoverage, "reorder"),
    ("symbol coverage: reorder", terms.SymbolCoverage, "reorder"),
    ("UTF-8 constraint: mask", constraints.WellFormedUTF8, "mask"),
    ("UTF-8 constraint: reorder", constraints.WellFormedUTF8, "reorder"),
    ("whole characters: mask", constraints.WholeCharacters, "mask"),
    ("byte bans: mask", constraints.ByteBan, "mask"),
    ("byte bans: reorder", constraints.ByteBan, "reorder"),
]


@contextmanager
def clocked(spent: dict[str, float]) -> Iterator[None]:
    """Wrap every part of :data:`PARTS` with a clock adding its seconds to ``spent``."""
    saved = [(owner, name, getattr(owner, name)) for _, owner, name in PARTS]

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start

        return run

    try:
        for (label, owner, name), (_, _, fn) in zip(PARTS, saved, strict=True):
            setattr(owner, name, timed(label, fn))
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.phases", description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--flores", type=Path, default=FLORES)
    ap.add_argument("--limit", type=int, default=320)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, default=Path("bench/phases.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sources = [p[0] for p in read_pairs(args.flores)][: args.limit]
    tr = Translator.from_pretrained(args.model_dir)
    tr.translate(sources[:8])  # warm-up
    rounds: list[dict[str, float]] = []
    for _ in range(args.rounds):
        spent: dict[str, float] = defaultdict(float)
        with clocked(spent):
            start = time.perf_counter()
            tr.translate(sources)
            spent["whole translate call"] = time.perf_counter() - start
        rounds.append(dict(spent))
    labels = ["whole translate call"] + [label for label, _, _ in PARTS]
    median = {k: statistics.median(r.get(k, 0.0) for r in rounds) for k in labels}
    whole = median["whole translate call"]
    # the parts are disjoint but for the indented one, which is inside the line above it
    outside = whole - sum(median[k] for k in labels[1:] if not k.startswith("  "))
    print(f"{len(sources)} FLORES sentences, {args.rounds} rounds (median seconds, share)")
    median["the rest (text steps, the loop, …)"] = outside
    for k, seconds in median.items():
        print(f"{k:>36}: {seconds:6.2f} s  {100 * seconds / whole:5.1f}%")
    write(args.json, args.model_dir, args.threads, sentences=len(sources), rounds=rounds)


if __name__ == "__main__":
    main()
