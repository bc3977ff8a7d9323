"""The attention of one sentence pair, every layer and head of the three kinds.

An :class:`AttentionMaps` holds what the model itself returned (the reference ``math``
backend's weights) for one source sentence and one target (the model's own translation or a
teacher-forced reference), with the tokens that label the axes and the masks that say which
cells the model was not allowed to look at. The heatmaps, the HTML viewer and the
explanations all read from it; none of them recomputes attention.

Shapes, with L layers, H heads, S source tokens and T target tokens:

* ``encoder``: (L, H, S, S) — source token i (query) attending to source token j (key);
* ``decoder``: (L, H, T, T) — decoder self-attention, causal (lower-triangular);
* ``cross``: (L, H, T, S) — target query i attending to source token j.

The decoder's query positions are its inputs ``tgt_tokens`` (``<bos>`` then the target); the
token each position *predicts* is the matching entry of ``out_tokens`` (the target then
``<eos>``). Labelling rows by the predicted token is what readers usually want ("when the
model wrote *gatto* it looked at *cat*"), so the plots label rows with ``out_tokens``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

KINDS = ("encoder", "decoder", "cross")
KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder self-attention (causal)",
    "cross": "cross-attention (target → source)",
}


@dataclass
class AttentionMaps:
    """Tokens and attention tensors [layer, head, query, key] of one sentence pair."""

    src_tokens: list[str]
    tgt_tokens: list[str]
    out_tokens: list[str]
    encoder: Tensor
    decoder: Tensor
    cross: Tensor
    encoder_mask: Tensor
    decoder_mask: Tensor
    cross_mask: Tensor
    source: str = ""
    translation: str = ""
    teacher_forced: bool = False
    meta: dict[str, Any] = field(default_factory=dict)  # JSON-able notes (model name, …)
    # What explain_head needs, as plain tensors (no live model): per kind and layer, the
    # q (H,Q,Dh), k and v (H,K,Dh) the layer computed, and its W^O (D, H·Dh).
    vectors: dict[str, list[dict[str, Tensor]]] | None = field(default=None, repr=False)
    out_weights: dict[str, list[Tensor]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        s, t = len(self.src_tokens), len(self.tgt_tokens)
        if len(self.out_tokens) != t:
            raise ValueError(f"{len(self.out_tokens)} output tokens for {t} decoder positions")
        for kind, (q, k) in {"encoder": (s, s), "decoder": (t, t), "cross": (t, s)}.items():
            w, m = self.weights(kind), self.mask(kind)
            if w.dim() != 4 or tuple(w.shape[2:]) != (q, k):
                raise ValueError(f"{kind} maps have shape {tuple(w.shape)}, expected (L,H,{q},{k})")
            if tuple(m.shape) != (q, k):
                raise ValueError(f"{kind} mask has shape {tuple(m.shape)}, expected ({q},{k})")

    # ------------------------------------------------------------------ access
    @property
    def n_dec_layers(self) -> int:
        return int(self.decoder.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.encoder.shape[1])

    def weights(self, kind: str) -> Tensor:
        """(L,H,Q,K) tensor of one kind: ``"encoder"``, ``"decoder"`` or ``"cross"``."""
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}; choose one of {', '.join(KINDS)}")
        out: Tensor = getattr(self, kind)
        return out

    def mask(self, kind: str) -> Tensor:
        """(Q,K) bool: True where the query was allowed to attend to the key."""
        out: Tensor = getattr(self, f"{kind}_mask") if kind in KINDS else self.weights(kind)
        return out

    def layers(self, kind: str) -> int:
        return int(self.weights(kind).shape[0])

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(row labels, column labels) for a kind: queries and keys."""
        if kind == "encoder":
            return self.src_tokens, self.src_tokens
        if kind == "decoder":
            return self.out_tokens, self.tgt_tokens
        self.weights(kind)
        return self.out_tokens, self.src_tokens

    def select(self, kind: str, layer: int | None = None, head: int | None = None) -> Tensor:
        """One (Q,K) map: a layer's head, or the average over heads (``head`` None).

        ``layer`` None averages over layers too. Indices are 0-based; errors name the range.
        """
        w = self.weights(kind)
        n_layers, n_heads = int(w.shape[0]), int(w.shape[1])
        if layer is not None and not 0 <= layer < n_layers:
            raise ValueError(
                f"layer {layer} is out of range: the {kind} has layers 0..{n_layers - 1}"
            )
        if head is not None and not 0 <= head < n_heads:
            raise ValueError(f"head {head} is out of range: each layer has heads 0..{n_heads - 1}")
        w = w if layer is None else w[layer : layer + 1]
        w = w if head is None else w[:, head : head + 1]
        return w.mean(dim=(0, 1))

    # ------------------------------------------------------------------ export
    def to_dict(self, decimals: int = 4) -> dict[str, Any]:
        """Plain JSON-able data (what the HTML page embeds)."""

        def rounded(t: Tensor) -> Any:
            return torch.round(t.float(), decimals=decimals).tolist()

        return {
            "source": self.source,
            "translation": self.translation,
            "teacher_forced": self.teacher_forced,
            "src_tokens": display_tokens(self.src_tokens),
            "tgt_tokens": display_tokens(self.tgt_tokens),
            "out_tokens": display_tokens(self.out_tokens),
            "kinds": {
                kind: {
                    "title": KIND_TITLES[kind],
                    "rows": display_tokens(self.axes(kind)[0]),
                    "cols": display_tokens(self.axes(kind)[1]),
                    "weights": rounded(self.weights(kind)),
                    "mask": self.mask(kind).to(torch.int8).tolist(),
                }
                for kind in KINDS
            },
            "meta": self.meta,
        }

    def to_json(self, decimals: int = 4) -> str:
        return json.dumps(self.to_dict(decimals), ensure_ascii=False)


def display_token(token: str) -> str:
    """A token as a reader should see it: SentencePiece's word marker ``▁`` dropped."""
    shown = token.replace("\u2581", "")
    return shown if shown else "\u2581"


def display_tokens(tokens: list[str]) -> list[str]:
    """Labels for a token sequence. With SentencePiece pieces (some start with ``▁``), a piece
    that continues a word is shown with a leading ``·`` (``tran ·s ·for ·mer``) so the word
    boundaries stay visible; specials and word tokens are shown as they are."""
    subword = any(t.startswith("\u2581") for t in tokens)
    out = []
    for i, t in enumerate(tokens):
        shown = display_token(t)
        special = t.startswith("<") and t.endswith(">")
        if subword and i > 0 and not special and not t.startswith("\u2581") and shown.isalnum():
            shown = "\u00b7" + shown
        out.append(shown)
    return out
