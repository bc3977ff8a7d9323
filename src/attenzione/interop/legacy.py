"""Model directories older versions wrote, read as the core has them now.

Until issue 65 a config said its sinusoid layout (``sinusoid_layout``: ``"interleaved"``, ours,
or ``"halves"``, Marian's all-sines-first, which imports kept). The core now has one layout;
an import brings its tensors into it (:mod:`attenzione.interop.names`). A config that still
names a layout loads: ``"interleaved"`` is simply dropped, and a ``"halves"`` model's tensors
are brought into our order by the same exact permutation an import applies — the network
computes what it computed, to float rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attenzione.config import ModelConfig
from attenzione.interop import names

LAYOUT = "sinusoid_layout"
LAYOUTS = ("interleaved", "halves")


@dataclass(frozen=True)
class Upgrade:
    """A config as the core reads it now, and what its weights need on the way in."""

    config: dict[str, Any]
    changes: tuple[str, ...] = ()  # what was converted, for a message (empty: nothing)
    steps: tuple[Callable[[dict[str, Tensor], ModelConfig], dict[str, Tensor]], ...] = field(
        default=()
    )

    def weights(self, state: dict[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
        """``state`` (our names) brought into the layout ``cfg`` describes."""
        for step in self.steps:
            state = step(state, cfg)
        return state


def _from_halves(state: dict[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    # Marian's dimension j is our dimension P[j]: ours is theirs taken in the order argsort(P)
    return names.reorder(state, cfg, torch.argsort(names.marian_order(cfg.d_model)))


def upgrade(data: dict[str, Any]) -> Upgrade:
    """The config ``data`` (a ``config.json``'s object) without the fields the core no longer
    has, and the steps that bring its weights along."""
    if LAYOUT not in data:
        return Upgrade(data)
    rest = {k: v for k, v in data.items() if k != LAYOUT}
    layout = data[LAYOUT]
    if layout not in LAYOUTS:
        raise ValueError(f"{LAYOUT} must be 'interleaved' or 'halves', got {layout!r}")
    if layout == "interleaved" or rest.get("positions", "sinusoidal") != "sinusoidal":
        return Upgrade(rest)  # ours already, or learned positions (any order is the model's)
    return Upgrade(rest, ("its sinusoids from Marian's order into ours",), (_from_halves,))
