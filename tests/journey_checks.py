"""What every token's journey must be, whichever model it follows (tests/test_journey.py and
the imported Marian model's test): each step equal to the model's own value, the steps the
issue names all there, the end the piece the translation wrote."""

from __future__ import annotations

from typing import Any

from attenzione.translator.journey import Journey

#: the steps every journey takes, in the order it first takes them
NAMES = [
    "embedding",
    "scaled embedding",
    "positional encoding",
    "embedding + position",
    "query",
    "key",
    "value",
    "scores",
    "scaled",
    "mask",
    "softmax",
    "weighted values",
    "concatenated heads",
    "W^O",
    "residual",
    "layer norm",
    "feed-forward in",
    "activation",
    "feed-forward",
    "logits",
    "chosen piece",
]


def tolerance(step: dict[str, Any]) -> float:
    """1e-5 in fp32, relative to the step's size where its values exceed 1 (a logit of 20 or
    a feed-forward sum of 100 carries float32's rounding of its own size)."""
    flat: list[float] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif v is not None:
            flat.append(abs(float(v)))

    walk(step["values"])
    return 1e-5 * max(1.0, max(flat, default=1.0))


def journey_is_the_model(journey: Journey, *, layers: int, heads: int) -> dict[str, Any]:
    """Check ``journey`` (see the module docstring); returns its JSON."""
    data = journey.to_dict()
    steps = data["steps"]
    names = [s["name"] for s in steps]
    # in this order (a pre-norm model's LayerNorm comes before its first block)
    order = [n for n in NAMES if n != "layer norm"]
    assert [n for n in dict.fromkeys(names) if n in order] == order and "layer norm" in names
    checked = [s for s in steps if s["check"] is not None]
    assert len(checked) > 10 * layers
    for s in checked:
        assert s["check"] <= tolerance(s), (s["where"], s["name"], s["check"])
    assert data["largest_check"] == max(s["check"] for s in checked)
    # every layer and block, every head
    for layer in range(layers):
        for block in ("self-attention", "cross-attention"):
            got = {s["head"] for s in steps if s.get("layer") == layer and s.get("block") == block
                   and s["name"] == "softmax"}  # fmt: skip
            assert got == set(range(heads)), (layer, block, got)
    for s in steps:  # the weights of each head sum to 1 over the keys it may see
        if s["name"] == "softmax" and "head" in s:
            assert abs(sum(s["values"]) - 1.0) < 1e-3
    # causality: position t sees no later key
    t = data["token"]
    for s in steps:
        if s["name"] == "mask" and s["block"] == "self-attention":
            assert s["masked_keys"] == list(range(t + 1, len(s["allowed"])))
    chosen = steps[-1]
    assert chosen["name"] == "chosen piece" and chosen["rank"] >= 1
    return data
