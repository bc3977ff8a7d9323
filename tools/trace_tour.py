"""The numbers of docs/attention.md's guided tour, from the shipped en→it model.

    python tools/trace_tour.py

Traces seed 000's sentence twice — the model's own translation, then with the prefix "Il"
forced — and prints, for each, the step that writes the participle's ending: its most likely
pieces with their probabilities, and the pieces the decoder's self-attention (last layer,
heads averaged) and its cross-attention (last layer) look at most at that step.
"""

from __future__ import annotations

import math
from typing import Any

from attenzione.config import search_config
from attenzione.translator.translator import Translator

SENTENCE = "The transformer architecture was introduced in 2017."


def _show(tr: Translator, prefix: str) -> None:
    made = tr.trace(SENTENCE, search=search_config(1), prefix=prefix)
    data = made.to_dict()
    print(f"prefix {prefix!r}: {made.translation}")
    steps = data["steps"]
    aux = next(i for i, s in enumerate(steps) if s["chosen"] in ("▁stata", "▁stato"))
    at = next(i for i, s in enumerate(steps) if s["prefix"] and s["prefix"][-1] == "▁introdott")
    for i in (aux, at):
        _step(data, i)


def _step(data: dict[str, Any], at: int) -> None:
    step = data["steps"][at]
    tops = ", ".join(f"{t['piece']!r} {math.exp(t['logprob']) * 100:.1f}%" for t in step["top"][:3])
    print(f"  step {at} (after {''.join(step['prefix']).replace('▁', ' ').strip()!r}): {tops}")
    fed = data["attention"]["tgt_tokens"][: at + 1]
    row = step["self_attention"][-1]
    best = sorted(range(len(row)), key=lambda j: -row[j])[:3]
    print(
        "  decoder self-attention, last layer: "
        + ", ".join(f"{fed[j]!r} {row[j]:.2f}" for j in best)
    )
    src = data["attention"]["src_tokens"]
    cross = step["cross_attention"][-1]
    best = sorted(range(len(cross)), key=lambda j: -cross[j])[:3]
    print("  cross-attention, last layer: " + ", ".join(f"{src[j]!r} {cross[j]:.2f}" for j in best))


def main() -> None:
    tr = Translator.from_pretrained()
    _show(tr, "")
    _show(tr, "Il")


if __name__ == "__main__":
    main()
