"""Collect a sentence's attention maps and explain one head's arithmetic with real numbers.

:func:`collect_attention` runs one teacher-forced pass with ``need_weights=True`` (which takes
the reference ``math`` kernel). The model returns, per attention layer, an
:class:`~attenzione.model.attention.AttentionRecord`: the weights, the query, key and value vectors
they came from, and the mask that was applied — nothing is recomputed or read off by patching
the model. The maps keep those tensors and each layer's W^O (dequantized for an int8 model),
and no live model: they are plain data, so :func:`explain_head` works the same for every
precision and after the model is gone. It walks through scaled dot-product attention for one
query token of one head:

    scores_j = q_i · k_j,   scaled_j = scores_j / √d_head,   masked keys → −∞,
    α_ij = softmax_j(scaled),   z_i = Σ_j α_ij v_j,   this head's share of the output = z_i W^O_h

and checks that its α equals the weights the model returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attenzione.data.tokenizers import Tokenizer
from attenzione.model.attention import AttentionRecord
from attenzione.model.fast.precision import plain_weight
from attenzione.model.transformer import Transformer
from attenzione.viz.maps import AttentionMaps, display_tokens


def _query_key_mask(record: AttentionRecord, n_q: int, n_k: int) -> Tensor:
    """The (Q,K) mask the layer applied to sentence 0 (all True when it applied none)."""
    if record.mask is None:
        return torch.ones(n_q, n_k, dtype=torch.bool)
    return record.mask[0, 0].expand(n_q, n_k).cpu().clone()  # (1|Q, K) -> (Q,K)


def collect_attention(
    model: Transformer,
    src_ids: Tensor,
    tgt_ids: Tensor,
    *,
    src_tokens: list[str],
    tgt_tokens: list[str],
    out_tokens: list[str],
    source: str = "",
    translation: str = "",
    teacher_forced: bool = False,
) -> AttentionMaps:
    """Every attention map of one sentence pair from a teacher-forced pass.

    ``src_ids`` (1,S) and ``tgt_ids`` (1,T) (``<bos>`` + target) form a batch of one with no
    padding. The returned maps carry the q/k/v vectors, the masks the model applied and W^O,
    everything :func:`explain_head` needs.
    """
    if src_ids.dim() != 2 or tgt_ids.dim() != 2 or src_ids.shape[0] != 1 or tgt_ids.shape[0] != 1:
        raise ValueError("collect_attention takes one sentence pair: src (1,S) and tgt (1,T)")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(src_ids, tgt_ids, need_weights=True)
    finally:
        model.train(was_training)
    cfg = model.config
    s, t = src_ids.shape[1], tgt_ids.shape[1]
    records = {
        "encoder": out.encoder.records,
        "decoder": out.decoder.self_records,
        "cross": out.decoder.cross_records,
    }
    shapes = {"encoder": (s, s), "decoder": (t, t), "cross": (t, s)}
    modules: dict[str, list[Any]] = {
        "encoder": [layer.self_attn for layer in model.encoder_layers],
        "decoder": [layer.self_attn for layer in model.decoder_layers],
        "cross": [layer.cross_attn for layer in model.decoder_layers],
    }

    def first(x: Tensor) -> Tensor:
        return x[0].detach().float().cpu()  # sentence 0, as float32 on the CPU

    return AttentionMaps(
        src_tokens=list(src_tokens),
        tgt_tokens=list(tgt_tokens),
        out_tokens=list(out_tokens),
        encoder=torch.stack([first(r.weights) for r in records["encoder"]]),
        decoder=torch.stack([first(r.weights) for r in records["decoder"]]),
        cross=torch.stack([first(r.weights) for r in records["cross"]]),
        encoder_mask=_query_key_mask(records["encoder"][0], *shapes["encoder"]),
        decoder_mask=_query_key_mask(records["decoder"][0], *shapes["decoder"]),
        cross_mask=_query_key_mask(records["cross"][0], *shapes["cross"]),
        source=source,
        translation=translation,
        teacher_forced=teacher_forced,
        meta={"d_head": cfg.d_head, "layers": f"{cfg.n_enc_layers}+{cfg.n_dec_layers}"},
        vectors={
            kind: [{"q": first(r.q), "k": first(r.k), "v": first(r.v)} for r in recs]
            for kind, recs in records.items()
        },
        out_weights={
            kind: [plain_weight(m.out_proj).float() for m in mods] for kind, mods in modules.items()
        },
    )


def replay(
    model: Transformer,
    tokenizers: tuple[Tokenizer, Tokenizer],
    src_ids: list[int],
    tgt_ids: list[int],
    *,
    source: str = "",
    translation: str = "",
    teacher_forced: bool = False,
) -> AttentionMaps:
    """:func:`collect_attention` for one sentence as the translator reads it: ``src_ids``
    (ending in ``<eos>``) and ``tgt_ids`` (no ``<bos>``/``<eos>``), labelled with the
    (source, target) ``tokenizers``' pieces."""
    src_tok, tgt_tok = tokenizers
    cfg = model.config
    device = next(model.parameters()).device
    src_t = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1,S)
    tgt_t = torch.tensor([[cfg.start_id, *tgt_ids]], dtype=torch.long, device=device)  # (1,T)
    pieces = [tgt_tok.id_to_token(i) for i in tgt_ids]
    return collect_attention(
        model,
        src_t,
        tgt_t,
        src_tokens=[src_tok.id_to_token(i) for i in src_ids],
        tgt_tokens=[tgt_tok.id_to_token(cfg.start_id), *pieces],
        out_tokens=[*pieces, tgt_tok.id_to_token(cfg.eos_id)],
        source=source,
        translation=translation,
        teacher_forced=teacher_forced,
    )


def cross_attention(
    model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], layer: int
) -> Tensor:
    """Decoder layer ``layer``'s cross-attention, its heads averaged, for one sentence pair
    teacher-forced: (T+2, S) for T ``tgt_ids`` (no ``<bos>``/``<eos>``) fed between ``<bos>``
    and ``<eos>``, row 0 the step fed ``<bos>``. What tag placement aligns by
    (:func:`attenzione.pipeline.markup.place`)."""
    cfg = model.config
    device = next(model.parameters()).device
    src = torch.tensor([list(src_ids)], dtype=torch.long, device=device)
    tgt = torch.tensor([[cfg.start_id, *tgt_ids, cfg.eos_id]], dtype=torch.long, device=device)
    with torch.inference_mode():
        out = model(src, tgt, need_weights=True)
    return out.decoder.cross_attentions[layer][0].float().mean(dim=0)


@dataclass
class HeadExplanation:
    """Attention's computation for one query token of one head, with the model's numbers."""

    kind: str
    layer: int
    head: int
    token: int
    query_token: str  # the decoder's: "input → the token it predicts"
    key_tokens: list[str]
    d_head: int
    q: Tensor  # (Dh,)
    k: Tensor  # (K,Dh)
    v: Tensor  # (K,Dh)
    scores: Tensor  # (K,)   q·k_j
    scaled: Tensor  # (K,)   q·k_j / √d_head
    allowed: Tensor  # (K,) bool
    weights: Tensor  # (K,)   softmax over allowed keys
    model_weights: Tensor  # (K,)  what the model returned
    z: Tensor  # (Dh,)  Σ α_ij v_j
    projected: Tensor  # (D,)  z W^O restricted to this head (its share of the output)

    @property
    def max_abs_difference(self) -> float:
        """Largest |our α − the model's α|: the check that the explanation is the model."""
        return float((self.weights - self.model_weights).abs().max())

    def to_dict(self, decimals: int = 4) -> dict[str, Any]:
        def r(t: Tensor) -> Any:
            return torch.round(t.float(), decimals=decimals).tolist()

        return {
            "kind": self.kind,
            "layer": self.layer,
            "head": self.head,
            "token": self.token,
            "query_token": self.query_token,
            "key_tokens": self.key_tokens,
            "d_head": self.d_head,
            "q": r(self.q),
            "k": r(self.k),
            "v": r(self.v),
            "scores": r(self.scores),
            "scaled": r(self.scaled),
            "allowed": [bool(a) for a in self.allowed],
            "weights": r(self.weights),
            "model_weights": r(self.model_weights),
            "z": r(self.z),
            "projected": r(self.projected),
            "max_abs_difference": self.max_abs_difference,
        }

    def format(self, decimals: int = 4, width: int = 6) -> str:
        """The computation as text a reader can check by hand."""
        f = f"{{:+.{decimals}f}}"

        def vec(t: Tensor, limit: int = width) -> str:
            vals = [f.format(float(x)) for x in t[:limit]]
            more = f", … ({t.numel()} values)" if t.numel() > limit else ""
            return "[" + ", ".join(vals) + more + "]"

        rows = display_tokens(self.key_tokens)
        lines = [
            f"{self.kind} attention, layer {self.layer}, head {self.head}, "
            f"query token {self.token} {self.query_token!r} (d_head = {self.d_head})",
            "",
            f"1. query  q_i = x_i W^Q_h = {vec(self.q)}",
            "2. keys   k_j = x_j W^K_h, and the scores q_i · k_j:",
        ]
        scale = math.sqrt(self.d_head)
        key_w = max(len(t) for t in rows) if rows else 1
        for j, tok in enumerate(rows):
            mark = "" if self.allowed[j] else "   masked: may not attend"
            lines.append(
                f"   j={j:<3d} {tok:<{key_w}}  k_j = {vec(self.k[j], 3)}  "
                f"q·k = {f.format(float(self.scores[j]))}{mark}"
            )
        lines += [
            f"3. divide by √d_head = √{self.d_head} = {scale:.4f};"
            " masked keys become −∞; softmax over the rest:",
        ]
        for j, tok in enumerate(rows):
            scaled = f.format(float(self.scaled[j])) if self.allowed[j] else "   −∞  "
            lines.append(
                f"   j={j:<3d} {tok:<{key_w}}  q·k/√d = {scaled}  "
                f"α = {self.weights[j]:.{decimals}f}  (model: {self.model_weights[j]:.{decimals}f})"
            )
        lines += [
            f"   Σ α = {float(self.weights.sum()):.{decimals}f}; largest |α − model's α| = "
            f"{self.max_abs_difference:.2e}",
            f"4. z_i = Σ_j α_ij v_j = {vec(self.z)}",
            f"5. this head's share of the output, z_i W^O_h = {vec(self.projected)}",
            "   (the layer's output adds the other heads' shares and the bias of W^O)",
        ]
        return "\n".join(lines)


def explain_head(
    maps: AttentionMaps, kind: str, layer: int, head: int, token: int
) -> HeadExplanation:
    """Explain query ``token`` of ``head`` in ``layer`` of ``kind`` with the recorded vectors."""
    weights = maps.weights(kind)
    n_layers, n_heads, n_q, _ = weights.shape
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} is out of range: the {kind} has layers 0..{n_layers - 1}")
    if not 0 <= head < n_heads:
        raise ValueError(f"head {head} is out of range: each layer has heads 0..{n_heads - 1}")
    if not 0 <= token < n_q:
        raise ValueError(f"token {token} is out of range: the queries are 0..{n_q - 1}")
    vectors, out_weights = maps.vectors, maps.out_weights
    if vectors is None or out_weights is None:
        raise ValueError("these maps carry no q/k/v vectors; build them with collect_attention")
    rec = vectors[kind][layer]
    q = rec["q"][head, token].float()  # (Dh,)
    k = rec["k"][head].float()  # (K,Dh)
    v = rec["v"][head].float()  # (K,Dh)
    d_head = q.numel()
    allowed = maps.mask(kind)[token].bool()
    scores = k @ q  # (K,)
    scaled = scores / math.sqrt(d_head)
    alpha = torch.zeros_like(scaled)
    if bool(allowed.any()):
        alpha[allowed] = torch.softmax(scaled[allowed], dim=0)
    z = alpha @ v  # (Dh,)
    w_o = out_weights[kind][layer]  # (D, H·Dh)
    projected = w_o[:, head * d_head : (head + 1) * d_head] @ z  # (D,)
    rows, cols = maps.axes(kind)
    return HeadExplanation(
        kind=kind,
        layer=layer,
        head=head,
        token=token,
        query_token=rows[token]
        if kind == "encoder"
        else f"{maps.tgt_tokens[token]} → {rows[token]}",
        key_tokens=list(cols),
        d_head=d_head,
        q=q,
        k=k,
        v=v,
        scores=scores,
        scaled=scaled,
        allowed=allowed,
        weights=alpha,
        model_weights=weights[layer, head, token].float(),
        z=z,
        projected=projected,
    )


def explanation_data(
    maps: AttentionMaps, kind: str, layer: int, head: int, token: int = 0
) -> dict[str, Any]:
    """One head's arithmetic for every query token, in the form the HTML page reads
    (``token`` is the one it shows first)."""
    n_q = maps.weights(kind).shape[2]
    steps = [explain_head(maps, kind, layer, head, i).to_dict() for i in range(n_q)]
    first = steps[0]
    return {
        "kind": kind,
        "layer": layer,
        "head": head,
        "token": token,
        "d_head": first["d_head"],
        "query_tokens": display_tokens(maps.axes(kind)[0]),
        "key_tokens": display_tokens(first["key_tokens"]),
        "k": first["k"],
        "v": first["v"],
        "q": [s["q"] for s in steps],
        "scores": [s["scores"] for s in steps],
        "scaled": [s["scaled"] for s in steps],
        "allowed": [s["allowed"] for s in steps],
        "weights": [s["weights"] for s in steps],
        "model_weights": [s["model_weights"] for s in steps],
        "z": [s["z"] for s in steps],
        "projected": [s["projected"] for s in steps],
        "max_abs_difference": [s["max_abs_difference"] for s in steps],
    }
