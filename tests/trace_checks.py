"""What every decoding trace must be, whichever model made it (tests/test_trace.py and the
imported Marian model's test): ``translate``'s output, recorded."""

from __future__ import annotations

import math
from typing import Any

from attenzione.config import DecodeConfig
from attenzione.translator.translator import Translator


def trace_is_translate(tr: Translator, text: str, search: DecodeConfig) -> dict[str, Any]:
    """Trace ``text`` and check it against ``translate`` with the same ``search``: the same
    text and ids; the chosen pieces the output's, then ``<eos>`` unless it was cut at the
    cap; each step's top pieces sorted, their probabilities summing to at most 1; greedy's
    top piece the chosen one. Returns the trace's JSON."""
    trace = tr.trace(text, search=search)
    [plain] = tr.translate(text, search=search)
    assert trace.translation == plain.text
    assert tuple(trace.tokens) == plain.candidates[0].ids
    data = trace.to_dict()
    chosen = [s["chosen_id"] for s in data["steps"]]
    assert chosen[: len(trace.tokens)] == list(trace.tokens)
    assert len(chosen) == len(trace.tokens) or chosen[-1] == tr.model.config.eos_id
    for step in data["steps"]:
        lps = [t["logprob"] for t in step["top"]]
        assert lps == sorted(lps, reverse=True)
        assert sum(math.exp(lp) for lp in lps) <= 1.0 + 1e-3  # rounded to 4 decimals
    if search.method == "greedy":  # the top bar is the chosen piece at every step
        assert all(s["top"][0]["id"] == s["chosen_id"] for s in data["steps"])
    return data
