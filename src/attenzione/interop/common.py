"""What the two exporters share: Marian's tensors of a model, its vocabularies, its card.

``attenzione export MODEL --format huggingface --out DIR`` writes a directory that
transformers loads with ``MarianMTModel`` and ``MarianTokenizer``
(:mod:`~attenzione.interop.huggingface`); ``--format ctranslate2`` one that
``ctranslate2.Translator`` loads (:mod:`~attenzione.interop.ctranslate2`). Both give the greedy
translations our own search gives the model alone (``tests/test_export.py`` holds it: the same
ids, logits within 1e-4), and both start from :func:`marian_weights`: one conversion, two
writers. Marian is the same encoder–decoder Transformer with other conventions. What needs care:

* **Names and positions**: the one table import and export share
  (:mod:`~attenzione.interop.names`), and its permutation of the residual stream from our
  interleaved sinusoids to Marian's sines-then-cosines.
* **Vocabularies.** Our ids are SentencePiece's own (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2,
  ``<unk>`` 3, corpus tags after the pieces); Marian numbers pieces through ``vocab.json``,
  written piece → our id: one table when both sides share a tokenizer, else ``vocab.json``
  and ``target_vocab.json`` (``separate_vocabs``). Corpus tags are special tokens, banned
  from the output (``bad_words_ids``) as our search bans them.
* **Start and specials.** Marian's decoder starts from ``<pad>``, ours from ``<bos>``:
  ``decoder_start_token_id`` says which. No forced ``<eos>`` at the length limit (ours has
  none); the final logits bias is ours or zero; the embedding scale is ``scale_embedding``.
* **What Marian cannot say is refused in one line**: pre-norm layers, heads that do not
  split d_model, learned positions, a LayerNorm epsilon other than 1e-5, a word-level
  tokenizer. CTranslate2 can hold them all (a word-level model's words are its vocabulary).

A source embedding narrower than d_model (GloVe and its projection) is folded into one table.
A vocabulary shortlist is not exported: the peers score the whole vocabulary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.tokenizers import Tokenizer, tag_piece
from attenzione.interop import names
from attenzione.model.transformer import Transformer
from attenzione.weights import unshared_state

# the fields of ModelConfig the exporters convert; another field (a later one) is exported
# only at its default, which is the network as they know it
KNOWN_FIELDS = frozenset((
    "src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_head", "d_ff", "n_enc_layers",
    "n_dec_layers", "dropout", "attn_dropout", "max_len", "positions", "norm", "tie_embeddings",
    "share_src_tgt_embeddings", "src_embed_dim", "freeze_src_embeddings", "pad_id", "bos_id",
    "eos_id", "unk_id", "activation", "scale_embeddings", "output_bias", "layer_norm_eps",
    "decoder_start_id",
))  # fmt: skip


class ExportRefused(ValueError):
    """The model does something the format cannot express; the message says what."""


@dataclass(frozen=True)
class MarianWeights:
    """A network in transformers' ``MarianMTModel`` names, its residual stream in Marian's
    order. ``tensors`` also holds ``model.encoder.layer_norm.*`` / ``model.decoder.layer_norm.*``
    for a pre-norm network (BART's names; Marian has no such layers). ``positions`` (L,D): the
    position table in that order."""

    tensors: dict[str, Tensor]
    positions: Tensor
    shared: bool


def marian_positions(length: int, d_model: int) -> Tensor:
    """(L,D) transformers' ``MarianSinusoidalPositionalEmbedding`` table, its arithmetic."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    angles = pos / torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)[:, : d_model // 2]], dim=1).float()


def unknown_settings(cfg: ModelConfig) -> list[str]:
    """``name=value`` of each config field this module does not know, set off its default."""
    values = ((f.name, getattr(cfg, f.name), f.default) for f in fields(cfg))
    return [
        f"{name}={v!r}" for name, v, default in values if name not in KNOWN_FIELDS and v != default
    ]


@torch.no_grad()
def marian_weights(model: Transformer, position_rows: int) -> MarianWeights:
    """``model``'s tensors under Marian's names (:mod:`~attenzione.interop.names`' table), its
    residual stream in Marian's order (the identity for learned positions: any order is
    theirs); every tensor of the model must find its place (else :class:`ExportRefused` names
    the first that does not). ``position_rows``: how many positions the table holds."""
    cfg = model.config
    state = unshared_state(model, torch.float32)
    order = names.marian_order(cfg.d_model) if cfg.positions == "sinusoidal" else None
    rows = names.table(cfg)
    tables = {r.ours: r for r in names.TABLES}
    inner = [r for r in rows if r.ours not in tables]  # the layers (and a pre-norm's norms)
    out = names.to_theirs(state, inner, order)
    used = {r.ours for r in inner if r.ours in state}

    def take(name: str) -> Tensor:
        used.add(name)
        t = state[name]
        return t if order is None else names.permute(t, tables[name].stream, order)

    def table(ours: str) -> Tensor:
        """(V,D) token vectors; a projection from another width is folded in: E·Wᵀ."""
        name = f"{ours}.embedding.weight"
        weight = state[name]
        if f"{ours}.proj.weight" in state:
            used.add(f"{ours}.proj.weight")
            weight = weight @ state[f"{ours}.proj.weight"].T  # (V,E) @ (E,D) -> (V,D)
        used.add(name)
        return weight if order is None else names.permute(weight, "reads", order)

    shared = cfg.share_src_tgt_embeddings
    src, tgt = tables["src_embed.embedding.weight"], tables["tgt_embed.embedding.weight"]
    if shared:
        out["model.shared.weight"] = table("src_embed")
        if not cfg.tie_embeddings:  # transformers 5 ties the stacks to it only with the head
            out[src.theirs] = out["model.shared.weight"].clone()
            out[tgt.theirs] = out["model.shared.weight"].clone()
    else:
        out[src.theirs] = table("src_embed")
        out[tgt.theirs] = table("tgt_embed")
    if not cfg.tie_embeddings:
        out[tables["generator.weight"].theirs] = take("generator.weight")  # (V, D)
    bias = take("generator.bias") if "generator.bias" in state else None
    out[tables["generator.bias"].theirs] = (
        torch.zeros(1, cfg.tgt_vocab_size) if bias is None else bias.reshape(1, -1).clone()
    )
    if cfg.positions == "learned":
        used.add("positions.embedding.weight")
    positions = model.positions(position_rows, 0).detach().float()
    if order is not None:
        positions = names.permute(positions, "reads", order)
    out[tables["positions.embedding.weight"].theirs] = positions
    out["model.decoder.embed_positions.weight"] = positions.clone()

    left = sorted(set(state) - used)
    if left:
        raise ExportRefused(f"the weight {left[0]} has no place in Marian's layout")
    return MarianWeights(out, positions, shared)


# ---------------------------------------------------------------------------- vocabularies
def pieces(tok: Tokenizer, size: int, side: str) -> list[str]:
    """The token of each id 0..size-1 of one side (a corpus tag as ``<tag:NAME>``)."""
    if tok.vocab_size != size:
        raise ExportRefused(
            f"the {side} tokenizer has {tok.vocab_size} tokens and the model reads {size}"
        )
    out = [tok.id_to_token(i) for i in range(size)]
    seen: dict[str, int] = {}
    for i, piece in enumerate(out):
        if piece in seen:
            raise ExportRefused(f"the {side} vocabulary spells ids {seen[piece]} and {i} alike")
        seen[piece] = i
    return out


def spm_model(tok: Tokenizer, side: str, fmt: str) -> bytes:
    """The SentencePiece model of one side (Marian's tokenizer is SentencePiece)."""
    proto = getattr(tok, "proto", None)
    if not isinstance(proto, bytes):
        raise ExportRefused(
            f"{fmt}: the {side} tokenizer is {type(tok).__name__}, and Marian's tokenizer is "
            "SentencePiece"
        )
    return proto


def tag_tokens(tok: Tokenizer) -> list[str]:
    """The corpus tags of a vocabulary, as tokens (``<tag:lc>``)."""
    return [tag_piece(name) for name in getattr(tok, "tags", ())]


def write_json(path: Path, data: Any) -> None:
    atomic.write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def model_card(info: dict[str, Any], fmt: str, use: str) -> str:
    """A short README: what the directory holds, how to ``use`` it, its licence (an imported
    model's) and whom its data credits."""
    source, target = info.get("source_language", "?"), info.get("target_language", "?")
    card = (
        f"# attenzione {source}→{target}, exported for {fmt}\n\nAn encoder–decoder Transformer "
        f"written by `attenzione export --format {fmt}` from an attenzione model directory. "
        "Greedy decoding gives the translations of `attenzione translate --raw --beam 1`.\n\n" + use
    )
    if info.get("licence"):
        card += f"\nLicence: {info['licence']}\n"
    credit = [line for line in str(info.get("attribution") or "").splitlines() if line.strip()]
    return card + ("\n## Data\n\n" + "".join(f"- {line}\n" for line in credit) if credit else "")
