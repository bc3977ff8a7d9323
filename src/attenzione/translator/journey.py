"""One token's journey through the whole model, with the model's own numbers, each step checked.

The decoder position ``n`` of a sentence pair (fed the piece before the one it predicts) is
followed from its piece id to the piece the model writes next::

    id ─ embedding row (× √d_model) ─ + positional encoding
       ─ every decoder layer: self-attention (query, keys, values → per head scores, ÷ √d_head,
         the causal mask, softmax, Σ α v → the heads concatenated → W^O) → + residual →
         LayerNorm; cross-attention on the encoder's output, the same way; the feed-forward
         block (how many units fire) → + residual → LayerNorm
       ─ the output layer over the vocabulary ─ softmax ─ the piece written

Every step is computed here, in float64, from the weights and the previous step's value — the
arithmetic a reader would do by hand — and compared with the value the model itself computed
for that position in one teacher-forced pass (read off with forward hooks on the reference
modules: ``check`` is the largest absolute difference). The other positions' states, which
the token's keys and values come from, are the model's own (each went the same way), and so is
the encoder's output the cross-attention reads.

The model followed is the reference (:mod:`attenzione.model`) built from the translator's
weights: a translator's model runs :mod:`attenzione.model.fast`'s kernels, whose numbers are
the same up to the order of float sums.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from attenzione.model.attention import MultiHeadAttention
from attenzione.model.layers import ACTIVATIONS, DecoderLayer, FeedForward
from attenzione.model.positional import SinusoidalPositions, make_positions
from attenzione.model.transformer import Transformer
from attenzione.viz.maps import display_tokens


@dataclass
class Step:
    """One step of the journey: ``values`` (float64) as computed here, ``check`` the largest
    |ours − the model's| (None where there is no model value to compare: a formula's
    constant, the piece chosen). ``where`` says which layer and block; ``info`` carries the
    step's own extras (a mask's keys, a LayerNorm's mean and variance, the units that fire…)."""

    name: str
    where: str
    formula: str
    values: Tensor
    shape: str
    check: float | None = None
    layer: int | None = None
    block: str | None = None
    head: int | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, decimals: int = 4) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "where": self.where,
            "formula": self.formula,
            "shape": self.shape,
            "values": _rounded(self.values, decimals),
            "check": self.check,
        }
        for key in ("layer", "block", "head"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out.update(self.info)
        return out


@dataclass
class Journey:
    """The steps of one token's way (the module docstring) and what it was."""

    source: str
    translation: str
    token: int
    input_piece: str
    predicted_piece: str
    src_tokens: list[str]
    tgt_tokens: list[str]
    steps: list[Step]
    config: dict[str, Any]

    @property
    def largest_check(self) -> float:
        """The largest difference from the model over every step."""
        return max((s.check for s in self.steps if s.check is not None), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "translation": self.translation,
            "token": self.token,
            "input_piece": self.input_piece,
            "predicted_piece": self.predicted_piece,
            "src_tokens": display_tokens(self.src_tokens),
            "tgt_tokens": display_tokens(self.tgt_tokens),
            "config": self.config,
            "largest_check": self.largest_check,
            "steps": [s.to_dict() for s in self.steps],
        }

    def format(self, width: int = 6) -> str:
        """The journey as text: one line a step, its first values and its check."""
        lines = [
            f"token {self.token}: {self.input_piece!r} → predicts {self.predicted_piece!r}",
            f"largest difference from the model over every step: {self.largest_check:.1e}",
            "",
        ]
        for s in self.steps:
            flat = s.values.flatten()
            vals = ", ".join(f"{float(x):+.4f}" for x in flat[:width])
            more = f", … ({flat.numel()} values)" if flat.numel() > width else ""
            check = "" if s.check is None else f"   check {s.check:.1e}"
            lines.append(f"{s.where:<34} {s.name:<20} {s.shape:<14} [{vals}{more}]{check}")
            if "note" in s.info:
                lines.append(f"{'':<34} {s.info['note']}")
        return "\n".join(lines)


#: Each loaded model's reference twin, made once (a Translator's weights never change): the
#: state dict of a model with model/fast's kernels is read back by unstacking its projections,
#: a tenth of a second at the shipped size, on every call before.
_REFERENCES: weakref.WeakKeyDictionary[Transformer, Transformer] = weakref.WeakKeyDictionary()
_REFERENCES_LOCK = threading.Lock()


def reference_model(model: Transformer) -> Transformer:
    """The reference :class:`Transformer` holding ``model``'s weights (its state dict reads as
    the reference's whatever kernels it runs), in float32 and eval mode; made once a model."""
    with _REFERENCES_LOCK:
        ref = _REFERENCES.get(model)
        if ref is None:
            ref = _REFERENCES[model] = _reference(model)
        return ref


def _reference(model: Transformer) -> Transformer:
    with torch.device("meta"):  # no random initialisation to throw away
        ref = Transformer(model.config)
    ref.load_state_dict(model.state_dict(), strict=True, assign=True)
    # the sinusoid table is a buffer the state dict does not carry: made anew
    ref.positions = make_positions(model.config.positions, model.config.d_model,
                                   model.config.max_len)  # fmt: skip
    if model.config.positions != "sinusoidal":
        ref.positions.load_state_dict(model.positions.state_dict())
    if model.config.tie_embeddings:
        ref.generator.weight = ref.tgt_embed.embedding.weight
    return ref.float().eval()


class _Tap:
    """Forward hooks that keep what chosen modules received and returned, call by call."""

    def __init__(self) -> None:
        self.inputs: dict[str, list[Tensor]] = {}
        self.outputs: dict[str, list[Tensor]] = {}
        self.handles: list[Any] = []

    def watch(self, name: str, module: nn.Module) -> None:
        def hook(_m: nn.Module, args: tuple[Any, ...], out: Any) -> None:
            if args and isinstance(args[0], Tensor):
                self.inputs.setdefault(name, []).append(args[0].detach())
            if isinstance(out, Tensor):
                self.outputs.setdefault(name, []).append(out.detach())

        self.handles.append(module.register_forward_hook(hook))

    def out(self, name: str) -> Tensor:
        return self.outputs[name][-1][0]  # the last call (the decoder's), sentence 0

    def inp(self, name: str) -> Tensor:
        return self.inputs[name][-1][0]

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def _diff(ours: Tensor, model: Tensor) -> float:
    return float((ours.double() - model.double()).abs().max()) if ours.numel() else 0.0


def _linear(x: Tensor, linear: nn.Module) -> Tensor:
    """x W^T + b in float64 (x (…, in))."""
    assert isinstance(linear, nn.Linear)
    y = x @ linear.weight.detach().double().T
    if linear.bias is not None:
        y = y + linear.bias.detach().double()
    return y


def _sinusoid(pos: int, d: int) -> tuple[Tensor, Tensor]:
    """PE(pos) by the paper's formula, and each pair's wavelength 2π·10000^(2i/d)."""
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    denom = torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)
    pe = torch.zeros(d, dtype=torch.float64)
    pe[0::2] = torch.sin(pos / denom)
    pe[1::2] = torch.cos(pos / denom)[: d // 2]
    return pe, 2 * math.pi * denom


class _Follower:
    """Builds the steps of position ``n``'s journey, one block after another."""

    def __init__(
        self,
        model: Transformer,
        tap: _Tap,
        records: dict[str, list[Any]],
        n: int,
        src_tokens: list[str],
        tgt_tokens: list[str],
    ) -> None:
        self.model, self.tap, self.records, self.n = model, tap, records, n
        self.src_tokens, self.tgt_tokens = src_tokens, tgt_tokens
        self.steps: list[Step] = []
        cfg = model.config
        self.heads, self.d_head, self.d_model = cfg.n_heads, cfg.d_head, cfg.d_model

    def add(self, step: Step) -> Tensor:
        self.steps.append(step)
        return step.values

    # -------------------------------------------------------------- a LayerNorm
    def layer_norm(self, x: Tensor, norm: nn.Module, tap: str, where: str, layer: int | None,
                   block: str) -> Tensor:  # fmt: skip
        assert isinstance(norm, nn.LayerNorm)
        mean = x.mean()
        var = ((x - mean) ** 2).mean()  # the biased variance, as LayerNorm uses
        gamma, beta = norm.weight.detach().double(), norm.bias.detach().double()
        y = (x - mean) / torch.sqrt(var + norm.eps) * gamma + beta
        return self.add(Step(
            "layer norm", where, "(x − mean) / √(variance + ε) · γ + β", y,
            f"{x.numel()}", _diff(y, self.tap.out(tap)[self.n]), layer, block,
            info={"mean": float(mean), "variance": float(var), "eps": norm.eps,
                  "gamma": _rounded(gamma), "beta": _rounded(beta)},
        ))  # fmt: skip

    # -------------------------------------------------------------- an attention block
    def attention(self, x: Tensor, layer: int, block: str, attn: MultiHeadAttention,
                  tap: str, keys_from: Tensor, key_tokens: list[str]) -> Tensor:  # fmt: skip
        """Multi-head attention of query ``x`` (D,) over ``keys_from`` (K,D) (the inputs the
        keys and values are projected from): the block's output z W^O + b (D,)."""
        n, h, dh = self.n, self.heads, self.d_head
        where = f"decoder layer {layer}, {block}"
        inner = h * dh
        shape = f"{self.d_model} → {h} × {dh}" + ("" if inner == self.d_model else f" = {inner}")
        q = self.add(Step(
            "query", where, "q = x W^Q + b", _linear(x, attn.q_proj).view(h, dh), shape,
            _diff(_linear(x, attn.q_proj), self.tap.out(f"{tap}.q_proj")[n]), layer, block,
        ))  # fmt: skip
        k_all = _linear(keys_from, attn.k_proj)  # (K, H·Dh)
        v_all = _linear(keys_from, attn.v_proj)
        n_keys = keys_from.shape[0]
        model_k = self.tap.out(f"{tap}.k_proj")[:n_keys]
        model_v = self.tap.out(f"{tap}.v_proj")[:n_keys]
        kshape = f"{n_keys} × ({shape})"
        k = self.add(
            Step(
                "key",
                where,
                "k_j = x_j W^K + b, for every key j",
                k_all.view(n_keys, h, dh),
                kshape,
                _diff(k_all, model_k),
                layer,
                block,
                info={"keys": display_tokens(key_tokens)},
            )
        ).transpose(0, 1)  # fmt: skip  (H,K,Dh)
        v = self.add(Step(
            "value", where, "v_j = x_j W^V + b, for every key j", v_all.view(n_keys, h, dh),
            kshape, _diff(v_all, model_v), layer, block, info={"keys": display_tokens(key_tokens)},
        )).transpose(0, 1)  # fmt: skip
        record = self.records[tap][0]  # the model's AttentionRecord for this layer
        mask = record.mask
        allowed = (
            torch.ones(n_keys, dtype=torch.bool)
            if mask is None
            else mask[0, 0].expand(-1, record.weights.shape[-1])[n][:n_keys].cpu()
        )
        model_alpha = record.weights[0, :, n, :n_keys].double()  # (H,K)
        z_model = self.tap.inp(f"{tap}.out_proj")[n].double()  # the heads side by side
        zs = []
        for a in range(h):
            hw = (layer, block, a)
            scores = k[a] @ q[a]  # (K,)
            self.add(Step("scores", where + f", head {a}", "q · k_j", scores, f"{n_keys}",
                          None, *hw))  # fmt: skip
            scaled = scores / math.sqrt(dh)
            self.add(Step("scaled", where + f", head {a}", f"q · k_j / √d_head (√{dh})", scaled,
                          f"{n_keys}", None, *hw))  # fmt: skip
            masked = scaled.masked_fill(~allowed, -math.inf)
            hidden = [i for i in range(n_keys) if not bool(allowed[i])]
            self.add(Step(
                "mask", where + f", head {a}", "masked keys → −∞", masked, f"{n_keys}", None, *hw,
                info={"allowed": [bool(x) for x in allowed], "masked_keys": hidden},
            ))  # fmt: skip
            alpha = torch.zeros(n_keys, dtype=torch.float64)
            if bool(allowed.any()):
                alpha[allowed] = torch.softmax(scaled[allowed], dim=0)
            self.add(Step("softmax", where + f", head {a}", "α_j = exp(s_j) / Σ_l exp(s_l)",
                          alpha, f"{n_keys}", _diff(alpha, model_alpha[a]), *hw))  # fmt: skip
            z = alpha @ v[a]  # (Dh,)
            zs.append(z)
            self.add(Step("weighted values", where + f", head {a}", "z = Σ_j α_j v_j", z,
                          f"{dh}", _diff(z, z_model[a * dh:(a + 1) * dh]), *hw))  # fmt: skip
        cat = torch.cat(zs)
        self.add(Step("concatenated heads", where, "[z_0; …; z_H−1]", cat, f"{h} × {dh} = {inner}",
                      _diff(cat, z_model), layer, block))  # fmt: skip
        o = _linear(cat, attn.out_proj)
        return self.add(Step(
            "W^O", where, "z W^O + b", o, f"{inner} → {self.d_model}",
            _diff(o, self.tap.out(f"{tap}.out_proj")[n]), layer, block,
        ))  # fmt: skip

    def residual(self, x: Tensor, sub: Tensor, model_sum: Tensor, where: str, layer: int,
                 block: str) -> Tensor:  # fmt: skip
        r = x + sub
        return self.add(Step("residual", where, "x + sublayer(x)", r, f"{r.numel()}",
                             _diff(r, model_sum), layer, block))  # fmt: skip

    def feed_forward(self, x: Tensor, layer: int, ffn: FeedForward, tap: str) -> Tensor:
        n, where, block = self.n, f"decoder layer {layer}, feed-forward", "feed-forward"
        u = _linear(x, ffn.linear1)
        d_ff = u.numel()
        act_name = ffn.activation
        act: Callable[[Tensor], Tensor] = ACTIVATIONS[act_name]
        fired = int((u > 0).sum())
        self.add(Step(
            "feed-forward in", where, "x W_1 + b_1", u, f"{self.d_model} → {d_ff}",
            _diff(u, self.tap.out(f"{tap}.linear1")[n]), layer, block,
        ))  # fmt: skip
        g = act(u)
        label = {"relu": "max(0, ·)", "gelu": "GELU", "swish": "x·σ(x)"}[act_name]
        self.add(Step(
            "activation", where, label, g, f"{d_ff}", None, layer, block,
            info={"fired": fired, "units": d_ff,
                  "note": f"{fired} of {d_ff} units fire (> 0)"},
        ))  # fmt: skip
        f = _linear(g, ffn.linear2)
        return self.add(Step(
            "feed-forward", where, f"{label}(x W_1 + b_1) W_2 + b_2", f,
            f"{d_ff} → {self.d_model}", _diff(f, self.tap.out(f"{tap}")[n]), layer, block,
        ))  # fmt: skip


def _rounded(t: Tensor, decimals: int = 5) -> Any:
    """``t`` as (nested) lists at ``decimals``, a masked −∞ as None (JSON has no infinity)."""
    r = torch.round(t.double(), decimals=decimals)
    if bool(torch.isfinite(r).all()):
        return r.tolist()
    return (
        [_rounded(x, decimals) for x in r]
        if r.dim() > 1
        else [float(x) if math.isfinite(x) else None for x in r.tolist()]
    )


def follow(
    model: Transformer,
    src_ids: Sequence[int],
    tgt_ids: Sequence[int],
    token: int,
    *,
    src_tokens: list[str],
    tgt_tokens: list[str],
    out_piece: Callable[[int], str],
    source: str = "",
    translation: str = "",
    top_k: int = 10,
) -> Journey:
    """The journey of decoder position ``token`` of the pair ``src_ids`` (ending in ``<eos>``)
    → ``tgt_ids`` (the output, no ``<bos>``/``<eos>``), fed ``[start] + tgt_ids``: position
    ``token`` is fed the start (0) or output piece ``token − 1`` and predicts output piece
    ``token`` (``<eos>`` after the last). ``model``: any model with the reference's state
    dict (:func:`reference_model` makes the reference from it). ``tgt_tokens``: the decoder's
    input pieces; ``out_piece``: an id's piece, for the vocabulary's top pieces."""
    cfg = model.config
    fed = [cfg.start_id, *tgt_ids]
    if not 0 <= token < len(fed):
        raise ValueError(
            f"token {token} is out of range: this translation's decoder positions are "
            f"0..{len(fed) - 1} (position i is fed piece i and predicts piece i+1)"
        )
    ref = reference_model(model)
    tap = _Tap()
    tap.watch("tgt_embed", ref.tgt_embed)
    tap.watch("tgt_embed.embedding", ref.tgt_embed.embedding)
    tap.watch("positions", ref.positions)
    tap.watch("generator", ref.generator)
    tap.watch("decoder_norm", ref.decoder_norm)
    for i, layer in enumerate(ref.decoder_layers):
        assert isinstance(layer, DecoderLayer)
        tap.watch(f"dec{i}", layer)
        for blk, attn in (("self", layer.self_attn), ("cross", layer.cross_attn)):
            for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                tap.watch(f"dec{i}.{blk}.{proj}", getattr(attn, proj))
        for res in ("res_self", "res_cross", "res_ffn"):
            tap.watch(f"dec{i}.{res}", getattr(layer, res).norm)
        tap.watch(f"dec{i}.ffn", layer.ffn)
        tap.watch(f"dec{i}.ffn.linear1", layer.ffn.linear1)
    src = torch.tensor([list(src_ids)], dtype=torch.long)
    tgt = torch.tensor([fed], dtype=torch.long)
    # the decoder layers' inputs: a pre-hook keeps what each layer received
    layer_in: list[Tensor] = []
    pre = [
        layer.register_forward_pre_hook(lambda _m, args: layer_in.append(args[0].detach()))
        for layer in ref.decoder_layers
    ]
    try:
        with torch.no_grad():
            out = ref(src, tgt, need_weights=True)
    finally:
        tap.close()
        for handle in pre:
            handle.remove()
    records: dict[str, list[Any]] = {}
    for i in range(cfg.n_dec_layers):
        records[f"dec{i}.self"] = [out.decoder.self_records[i]]
        records[f"dec{i}.cross"] = [out.decoder.cross_records[i]]
    f = _Follower(ref, tap, records, token, src_tokens, tgt_tokens)
    n = token
    piece_id = fed[n]
    embed = ref.tgt_embed
    row = embed.embedding.weight.detach()[piece_id].double()
    f.add(Step(
        "embedding", "input", f"row {piece_id} of the embedding table", row, f"{row.numel()}",
        _diff(row, tap.out("tgt_embed.embedding")[n]),
        info={"id": piece_id, "piece": display_tokens([tgt_tokens[n]])[0]},
    ))  # fmt: skip
    x = row
    if isinstance(embed.proj, nn.Linear):
        x = f.add(Step("embedding projection", "input", "e P", x @ embed.proj.weight.detach()
                       .double().T, f"{row.numel()} → {cfg.d_model}", None))  # fmt: skip
    scale = float(embed.scale)
    x = f.add(Step(
        "scaled embedding", "input",
        f"× √d_model = × {scale:.4f}" if scale != 1.0 else "× 1 (this model does not scale)",
        x * scale, f"{cfg.d_model}", _diff(x * scale, tap.out("tgt_embed")[n]),
    ))  # fmt: skip
    if isinstance(ref.positions, SinusoidalPositions):
        pe, wavelengths = _sinusoid(n, cfg.d_model)
        f.add(Step(
            "positional encoding", "input",
            f"PE({n}, 2i) = sin({n} / 10000^(2i/{cfg.d_model})), PE({n}, 2i+1) = cos(…)",
            pe, f"{cfg.d_model}", _diff(pe, tap.outputs["positions"][-1][n]),
            info={"position": n, "wavelengths": _rounded(wavelengths, 3)},
        ))  # fmt: skip
    else:
        pe = tap.outputs["positions"][-1][n].double()
        f.add(Step("positional encoding", "input", f"the learned vector of position {n}", pe,
                   f"{cfg.d_model}", 0.0, info={"position": n}))  # fmt: skip
    x = f.add(Step("embedding + position", "input", "x = e · scale + PE", x + pe,
                   f"{cfg.d_model}", _diff(x + pe, layer_in[0][0, n])))  # fmt: skip
    memory = out.encoder.memory[0].double()  # (S,D): the encoder's output, the model's own
    pre_norm = cfg.norm == "pre"
    for i, layer in enumerate(ref.decoder_layers):
        assert isinstance(layer, DecoderLayer)
        states = layer_in[i][0].double()  # (T,D): the model's states of every position
        blocks: list[tuple[str, str, nn.Module]] = [
            ("self-attention", "res_self", layer.self_attn),
            ("cross-attention", "res_cross", layer.cross_attn),
            ("feed-forward", "res_ffn", layer.ffn),
        ]
        for j, (block, res_name, module) in enumerate(blocks):
            where = f"decoder layer {i}, {block}"
            norm = getattr(layer, res_name).norm
            tap_norm = f"dec{i}.{res_name}"
            # the model's input to this block, every position (to project keys from)
            block_in = states if j == 0 else tap.out(f"dec{i}.{blocks[j - 1][1]}").double()
            if pre_norm:
                h = f.layer_norm(x, norm, tap_norm, where, i, block)
                keys_in = tap.out(tap_norm).double()
            else:
                h, keys_in = x, block_in
            if block == "self-attention":
                assert isinstance(module, MultiHeadAttention)
                own = keys_in.clone()
                own[n] = h  # this token's own key and value come from its own state
                sub = f.attention(h, i, block, module, f"dec{i}.self", own, tgt_tokens)
            elif block == "cross-attention":
                assert isinstance(module, MultiHeadAttention)
                sub = f.attention(h, i, block, module, f"dec{i}.cross", memory, src_tokens)
            else:
                assert isinstance(module, FeedForward)
                sub = f.feed_forward(h, i, module, f"dec{i}.ffn")
            if pre_norm:
                # the sum is the next block's input: the next LayerNorm's (or the stack's)
                following = (
                    tap.inp(f"dec{i}.{blocks[j + 1][1]}") if j < 2 else
                    layer_in[i + 1][0] if i + 1 < cfg.n_dec_layers else tap.inp("decoder_norm")
                )  # fmt: skip
                x = f.residual(x, sub, following[n], where, i, block)
            else:
                r = f.residual(x, sub, tap.inp(tap_norm)[n], where, i, block)
                x = f.layer_norm(r, norm, tap_norm, where, i, block)
    if pre_norm:
        x = f.layer_norm(x, ref.decoder_norm, "decoder_norm", "output", None, "output")
    logits = _linear(x, ref.generator)
    model_logits = tap.out("generator")[n].double()
    top = torch.topk(logits, min(top_k, logits.numel()))
    f.add(Step(
        "logits", "output", "x W_vocab" + (" + b" if ref.generator.bias is not None else ""),
        logits[top.indices], f"{cfg.d_model} → {logits.numel()}",
        _diff(logits, model_logits),
        info={"ids": top.indices.tolist(), "pieces": display_tokens(
            [out_piece(int(i)) for i in top.indices]), "note": f"the {len(top.indices)} largest "
            f"of {logits.numel()} (the check covers all)"},
    ))  # fmt: skip
    probs = torch.softmax(logits, dim=0)
    model_probs = torch.softmax(model_logits, dim=0)
    predicted = fed[n + 1] if n + 1 < len(fed) else cfg.eos_id
    rank = int((probs > probs[predicted]).sum()) + 1
    f.add(Step(
        "softmax", "output", "p_v = exp(ℓ_v) / Σ_u exp(ℓ_u)", probs[top.indices],
        f"{logits.numel()}", _diff(probs, model_probs),
        info={"ids": top.indices.tolist(), "pieces": display_tokens(
            [out_piece(int(i)) for i in top.indices]), "sum": float(probs.sum())},
    ))  # fmt: skip
    best = int(probs.argmax())
    f.add(Step(
        "chosen piece", "output", "the piece the translation writes here", probs[[predicted]],
        "1", None,
        info={"id": predicted, "piece": display_tokens([out_piece(predicted)])[0],
              "probability": float(probs[predicted]), "rank": rank,
              "most_likely": display_tokens([out_piece(best)])[0],
              "note": f"p = {float(probs[predicted]):.4f}, rank {rank} of {probs.numel()}"},
    ))  # fmt: skip
    return Journey(
        source=source,
        translation=translation,
        token=n,
        input_piece=tgt_tokens[n],
        predicted_piece=out_piece(predicted),
        src_tokens=src_tokens,
        tgt_tokens=tgt_tokens,
        steps=f.steps,
        config={"d_model": cfg.d_model, "heads": cfg.n_heads, "d_head": cfg.d_head,
                "d_ff": cfg.d_ff, "decoder_layers": cfg.n_dec_layers, "norm": cfg.norm,
                "activation": cfg.activation},
    )  # fmt: skip
