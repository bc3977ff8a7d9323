"""A model directory written for the toolkits people deploy: transformers and CTranslate2.

``attenzione export MODEL --format huggingface --out DIR`` writes a directory that
transformers loads with ``MarianMTModel`` and ``MarianTokenizer``; ``--format ctranslate2``
one that ``ctranslate2.Translator`` loads (:mod:`attenzione.translator.export_formats`). Both give
the greedy translations our own search gives the model alone (``tests/test_export.py`` holds
it: the same ids, logits within 1e-4). The Hugging Face directory is written by hand (JSON,
the tensors through :mod:`attenzione.translator.weights`, the SentencePiece models copied), so
exporting needs neither transformers nor CTranslate2's Transformers converter.

Marian is the same encoder–decoder Transformer with other conventions. What needs care:

* **Positions.** Ours interleave sines and cosines (dimension 2i sin, 2i+1 cos); Marian's put
  every sine first. The values are the same in another order, so one permutation P of the
  d_model dimensions, applied to everything that reads or writes the residual stream, is an
  exact reparametrisation: the token embeddings and the output layer (their columns), the
  Q/K/V projections and the first FFN layer (their input columns), the attention outputs and
  the second FFN layer (their output rows and biases), each LayerNorm's weight and bias (its
  mean and variance do not see the order). Heads and FFN units keep their order.
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
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.tokenizers import Tokenizer, tag_piece
from attenzione.model.transformer import Transformer
from attenzione.translator import model_dir
from attenzione.translator.registry import pair_of
from attenzione.translator.weights import WEIGHTS_NAME, unshared_state

FORMATS = ("huggingface", "ctranslate2")
# the fields of ModelConfig this module converts; another field (a later one) is exported
# only at its default, which is the network as this module knows it
KNOWN_FIELDS = frozenset((
    "src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_head", "d_ff", "n_enc_layers",
    "n_dec_layers", "dropout", "attn_dropout", "max_len", "positions", "norm", "tie_embeddings",
    "share_src_tgt_embeddings", "src_embed_dim", "freeze_src_embeddings", "pad_id", "bos_id",
    "eos_id", "unk_id", "activation", "sinusoid_layout", "scale_embeddings", "output_bias",
    "layer_norm_eps", "decoder_start_id",
))  # fmt: skip


# every name an export of each format may write: a re-export replaces these and keeps the rest
_VOCABS = tuple(f"{side}_vocabulary.{ext}" for side in ("shared", "source", "target")
                for ext in ("json", "txt"))  # fmt: skip
WRITES = {
    "huggingface": frozenset((
        "config.json", WEIGHTS_NAME, "generation_config.json", "vocab.json", "target_vocab.json",
        "source.spm", "target.spm", "tokenizer_config.json", "special_tokens_map.json",
        "README.md",
    )),
    "ctranslate2": frozenset(("config.json", "model.bin", *_VOCABS, "source.spm", "target.spm",
                              "README.md")),
}  # fmt: skip


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


def marian_order(cfg: ModelConfig) -> Tensor:
    """(D,) the permutation P: Marian's dimension j is our dimension P[j]. Sines first (ours at
    the even dimensions), then cosines (the odd ones); the identity for a network already in
    Marian's order or with learned positions (any order is theirs)."""
    d = cfg.d_model
    if cfg.positions != "sinusoidal" or cfg.sinusoid_layout == "halves":
        return torch.arange(d)
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])


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
    """``model``'s tensors renamed and permuted (:func:`marian_order`); every tensor of the
    model must find its place (else :class:`ExportRefused` names the first that does not).
    ``position_rows``: how many positions the table holds."""
    cfg = model.config
    state = unshared_state(model, torch.float32)
    used: set[str] = set()
    p = marian_order(cfg)

    def take(name: str) -> Tensor:
        used.add(name)
        return state[name]

    def reads(name: str) -> Tensor:  # a weight whose inputs are the residual stream
        return take(name)[:, p].contiguous()

    def writes(name: str) -> Tensor:  # a weight or bias whose outputs are the residual stream
        return take(name)[p].contiguous()

    out: dict[str, Tensor] = {}

    def attention(ours: str, theirs: str) -> None:
        for part in "qkv":
            out[f"{theirs}.{part}_proj.weight"] = reads(f"{ours}.{part}_proj.weight")  # (H·Dh, D)
            out[f"{theirs}.{part}_proj.bias"] = take(f"{ours}.{part}_proj.bias")
        out[f"{theirs}.out_proj.weight"] = writes(f"{ours}.out_proj.weight")  # (D, H·Dh)
        out[f"{theirs}.out_proj.bias"] = writes(f"{ours}.out_proj.bias")

    def norm(ours: str, theirs: str) -> None:
        out[f"{theirs}.weight"] = writes(f"{ours}.weight")
        out[f"{theirs}.bias"] = writes(f"{ours}.bias")

    def ffn(ours: str, theirs: str) -> None:
        out[f"{theirs}.fc1.weight"] = reads(f"{ours}.linear1.weight")  # (F, D)
        out[f"{theirs}.fc1.bias"] = take(f"{ours}.linear1.bias")
        out[f"{theirs}.fc2.weight"] = writes(f"{ours}.linear2.weight")  # (D, F)
        out[f"{theirs}.fc2.bias"] = writes(f"{ours}.linear2.bias")

    def table(ours: str) -> Tensor:
        """(V,D) token vectors; a projection from another width is folded in: E·Wᵀ."""
        weight = take(f"{ours}.embedding.weight")
        if f"{ours}.proj.weight" in state:
            weight = weight @ take(f"{ours}.proj.weight").T  # (V,E) @ (E,D) -> (V,D)
        return weight[:, p].contiguous()

    for i in range(cfg.n_enc_layers):
        ours, theirs = f"encoder_layers.{i}", f"model.encoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{theirs}.self_attn")
        norm(f"{ours}.res_attn.norm", f"{theirs}.self_attn_layer_norm")
        ffn(f"{ours}.ffn", theirs)
        norm(f"{ours}.res_ffn.norm", f"{theirs}.final_layer_norm")
    for i in range(cfg.n_dec_layers):
        ours, theirs = f"decoder_layers.{i}", f"model.decoder.layers.{i}"
        attention(f"{ours}.self_attn", f"{theirs}.self_attn")
        norm(f"{ours}.res_self.norm", f"{theirs}.self_attn_layer_norm")
        attention(f"{ours}.cross_attn", f"{theirs}.encoder_attn")
        norm(f"{ours}.res_cross.norm", f"{theirs}.encoder_attn_layer_norm")
        ffn(f"{ours}.ffn", theirs)
        norm(f"{ours}.res_ffn.norm", f"{theirs}.final_layer_norm")
    if cfg.norm == "pre":  # the stacks' final LayerNorms (BART's names)
        norm("encoder_norm", "model.encoder.layer_norm")
        norm("decoder_norm", "model.decoder.layer_norm")

    shared = cfg.share_src_tgt_embeddings
    if shared:
        out["model.shared.weight"] = table("src_embed")
        if not cfg.tie_embeddings:  # transformers 5 ties the stacks to it only with the head
            out["model.encoder.embed_tokens.weight"] = out["model.shared.weight"].clone()
            out["model.decoder.embed_tokens.weight"] = out["model.shared.weight"].clone()
    else:
        out["model.encoder.embed_tokens.weight"] = table("src_embed")
        out["model.decoder.embed_tokens.weight"] = table("tgt_embed")
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = reads("generator.weight")  # (V, D)
    bias = take("generator.bias") if "generator.bias" in state else None
    out["final_logits_bias"] = (
        torch.zeros(1, cfg.tgt_vocab_size) if bias is None else bias.reshape(1, -1).clone()
    )
    if cfg.positions == "learned":
        used.add("positions.embedding.weight")
    positions = model.positions(position_rows, 0).detach().float()[:, p].contiguous()
    out["model.encoder.embed_positions.weight"] = positions
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


# ---------------------------------------------------------------------------- the command
def _writer(fmt: str) -> Callable[..., None]:
    from attenzione.translator.export_formats import write_ctranslate2, write_huggingface

    if fmt == "huggingface":
        return write_huggingface
    if fmt == "ctranslate2":
        return write_ctranslate2
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def complete(fmt: str) -> Callable[[Path], bool]:
    """Whether a directory is a whole export of ``fmt``: its files, and the README written
    last that names the format (a model directory, or anything else, is never taken for one
    and replaced)."""
    need = ("config.json", WEIGHTS_NAME) if fmt == "huggingface" else ("config.json", "model.bin")

    def check(path: Path) -> bool:
        card = path / "README.md"
        if not card.is_file() or not all((path / name).is_file() for name in need):
            return False
        with card.open(encoding="utf-8", errors="replace") as f:
            return f.readline().endswith(f"exported for {fmt}\n")

    return check


def export(model: str | Path, fmt: str, out: str | Path) -> Path:
    """Write the model directory ``model`` to ``out`` in format ``fmt`` (one of
    :data:`FORMATS`), atomically: ``out`` holds the whole export or what it held before. An
    ``out`` that exists must be empty or an earlier export of the format."""
    writer = _writer(fmt)
    source, target = Path(model), Path(out)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} is a file, not a directory")
    if target.is_dir() and any(target.iterdir()) and not complete(fmt)(target):
        raise FileExistsError(
            f"{target} exists and is not a {fmt} export: give a new or empty directory"
        )
    if source.exists() and target.exists():
        inside = (
            source.resolve() == target.resolve() or target.resolve() in source.resolve().parents
        )
        if inside:
            raise ValueError(f"{target} holds the model {source}: give another directory to write")
    atomic.check_replaceable(target, complete(fmt))  # the current directory, a twin in the way
    net = model_dir.load_model(source).eval()
    src_tok, tgt_tok = model_dir.load_tokenizers(source, net.config)
    info = model_dir.read_info(source)
    info["source_language"], info["target_language"] = pair_of(source, info)
    unknown = unknown_settings(net.config)
    if unknown:
        raise ExportRefused(f"{fmt}: this export does not know {unknown[0]}")

    def fill(tmp: Path) -> None:
        writer(tmp, net, src_tok, tgt_tok, info)

    # an earlier export is replaced file by file of ours: what the user added there stays
    return atomic.replace_directory(
        target, fill, complete=complete(fmt), owned=WRITES[fmt].__contains__
    )
