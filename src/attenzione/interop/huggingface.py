"""The Hugging Face exporter: a directory transformers loads with ``MarianMTModel``.

Written without transformers: ``config.json`` and ``generation_config.json`` (our start
token, our special ids, our length limit, greedy, corpus tags banned), the weights (Marian's
names, :func:`~attenzione.interop.common.marian_weights`, saved by :mod:`attenzione.weights`),
``vocab.json`` (and ``target_vocab.json`` when the sides differ), ``source.spm`` /
``target.spm`` and ``tokenizer_config.json``. What transformers' Marian cannot hold is refused
in one line, naming the format that can.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.tokenizers import Tokenizer
from attenzione.interop.common import (
    ExportRefused,
    marian_positions,
    marian_weights,
    model_card,
    pieces,
    spm_model,
    tag_tokens,
    write_json,
)
from attenzione.interop.registry import register_exporter
from attenzione.model.transformer import Transformer
from attenzione.weights import WEIGHTS_NAME, save_tensors

# every name an export may write: a re-export replaces these and keeps the rest
WRITES = frozenset((
    "config.json", WEIGHTS_NAME, "generation_config.json", "vocab.json", "target_vocab.json",
    "source.spm", "target.spm", "tokenizer_config.json", "special_tokens_map.json", "README.md",
))  # fmt: skip

MARIAN_EPS = 1e-5  # transformers' Marian layers use nn.LayerNorm's default

HF_USE = """```python
from transformers import MarianMTModel, MarianTokenizer
tok, model = MarianTokenizer.from_pretrained("DIR"), MarianMTModel.from_pretrained("DIR")
batch = tok(["..."], return_tensors="pt", padding=True)
print(tok.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""


def refusals_huggingface(cfg: ModelConfig) -> list[str]:
    """Why transformers' Marian cannot hold ``cfg`` (empty: it can)."""
    out = []
    if cfg.norm == "pre":
        out.append(
            "Marian normalises after each sub-layer and this model before (norm=pre): "
            "--format ctranslate2 can hold it"
        )
    if cfg.inner_dim != cfg.d_model:
        out.append(
            f"Marian's heads split d_model, and this model's n_heads × d_head = {cfg.n_heads} × "
            f"{cfg.d_head} is not d_model {cfg.d_model}: --format ctranslate2 can hold it"
        )
    if cfg.positions != "sinusoidal":
        out.append(
            f"Marian's positions are sinusoids and this model's are {cfg.positions}: "
            "--format ctranslate2 can hold them"
        )
    if cfg.layer_norm_eps != MARIAN_EPS:
        out.append(f"Marian's LayerNorm epsilon is 1e-5, this model's {cfg.layer_norm_eps:g}")
    return out


def hf_config(cfg: ModelConfig, shared: bool) -> dict[str, Any]:
    """``config.json`` of a ``MarianMTModel`` with ``cfg``'s shape and conventions."""
    return {
        "architectures": ["MarianMTModel"],
        "model_type": "marian",
        "vocab_size": cfg.src_vocab_size,
        "decoder_vocab_size": cfg.tgt_vocab_size,
        "share_encoder_decoder_embeddings": shared,
        "tie_word_embeddings": cfg.tie_embeddings,
        "d_model": cfg.d_model,
        "encoder_layers": cfg.n_enc_layers,
        "decoder_layers": cfg.n_dec_layers,
        "encoder_attention_heads": cfg.n_heads,
        "decoder_attention_heads": cfg.n_heads,
        "encoder_ffn_dim": cfg.d_ff,
        "decoder_ffn_dim": cfg.d_ff,
        "activation_function": cfg.activation,  # relu, gelu (erf) or swish: transformers' names
        "dropout": cfg.dropout,
        "attention_dropout": cfg.attn_dropout,
        "activation_dropout": 0.0,
        "encoder_layerdrop": 0.0,
        "decoder_layerdrop": 0.0,
        "init_std": 0.02,
        "max_position_embeddings": cfg.max_len,
        "scale_embedding": cfg.scale_embeddings,
        "pad_token_id": cfg.pad_id,
        "bos_token_id": cfg.bos_id,
        "eos_token_id": cfg.eos_id,
        "decoder_start_token_id": cfg.start_id,
        "forced_eos_token_id": None,
        "is_encoder_decoder": True,
        "use_cache": True,
        "torch_dtype": "float32",
    }


def generation_config(cfg: ModelConfig, banned: list[int]) -> dict[str, Any]:
    """``generation_config.json``: greedy, our start token and length limit, tags banned."""
    out: dict[str, Any] = {
        "decoder_start_token_id": cfg.start_id,
        "bos_token_id": cfg.bos_id,
        "eos_token_id": cfg.eos_id,
        "pad_token_id": cfg.pad_id,
        "forced_eos_token_id": None,
        "max_length": cfg.max_len,
        "num_beams": 1,
    }
    if banned:
        out["bad_words_ids"] = [[i] for i in banned]
    return out


@register_exporter("huggingface", writes=WRITES, needs=("config.json", WEIGHTS_NAME))
def write_huggingface(
    tmp: Path, model: Transformer, src: Tokenizer, tgt: Tokenizer, info: dict[str, Any]
) -> None:
    """Fill ``tmp`` with the Marian directory of ``model`` and its tokenizers."""
    cfg = model.config
    problems = refusals_huggingface(cfg)
    if problems:
        raise ExportRefused(f"huggingface: {problems[0]}")
    src_spm, tgt_spm = (
        spm_model(src, "source", "huggingface"),
        spm_model(tgt, "target", "huggingface"),
    )
    src_pieces = pieces(src, cfg.src_vocab_size, "source")
    tgt_pieces = pieces(tgt, cfg.tgt_vocab_size, "target")
    weights = marian_weights(model, cfg.max_len)
    # transformers builds the table itself (and does not save it): it must be the one we use
    gap = (weights.positions - marian_positions(cfg.max_len, cfg.d_model)).abs().max()
    if float(gap) > 1e-5:
        raise ExportRefused(f"huggingface: the positions differ from Marian's by {float(gap):.2g}")
    save_tensors(tmp / WEIGHTS_NAME, weights.tensors)
    tags = tag_tokens(tgt)
    banned = [tgt_pieces.index(t) for t in tags]
    write_json(tmp / "config.json", hf_config(cfg, weights.shared))
    write_json(tmp / "generation_config.json", generation_config(cfg, banned))
    joint = src_pieces == tgt_pieces and src_spm == tgt_spm
    write_json(tmp / "vocab.json", {piece: i for i, piece in enumerate(src_pieces)})
    if not joint:
        write_json(tmp / "target_vocab.json", {piece: i for i, piece in enumerate(tgt_pieces)})
    atomic.write_bytes(tmp / "source.spm", src_spm)
    atomic.write_bytes(tmp / "target.spm", tgt_spm)
    named = {"eos_token": cfg.eos_id, "unk_token": cfg.unk_id, "pad_token": cfg.pad_id}
    if cfg.bos_id != cfg.pad_id:
        named["bos_token"] = cfg.bos_id
    for name, i in named.items():  # one string names a special token of both sides
        if src_pieces[i] != tgt_pieces[i]:
            raise ExportRefused(
                f"huggingface: id {i} ({name}) is {src_pieces[i]!r} in the source vocabulary "
                f"and {tgt_pieces[i]!r} in the target's"
            )
    specials = {name: tgt_pieces[i] for name, i in named.items()}
    extra = sorted(set(tag_tokens(src)) | set(tags))
    source, target = info.get("source_language"), info.get("target_language")
    tok_config: dict[str, Any] = {
        "tokenizer_class": "MarianTokenizer",
        "source_lang": source,
        "target_lang": target,
        "separate_vocabs": not joint,
        "model_max_length": cfg.max_len,
        "sp_model_kwargs": {},
        **specials,
    }
    if extra:
        tok_config["additional_special_tokens"] = extra
    write_json(tmp / "tokenizer_config.json", tok_config)
    atomic.write_text(tmp / "README.md", model_card(info, "huggingface", HF_USE))  # last
