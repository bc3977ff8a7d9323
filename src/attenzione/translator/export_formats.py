"""The two formats an export writes: a Hugging Face Marian directory and a CTranslate2 model.

Both writers take the tensors of :func:`~attenzione.translator.export.marian_weights` (Marian's
names, the residual stream in Marian's order): one conversion, two writers.

**Hugging Face** (no transformers needed to write it): ``config.json`` and
``generation_config.json`` (our start token, our special ids, our length limit, greedy, corpus
tags banned), the weights (written by :mod:`attenzione.translator.weights`), ``vocab.json``
(and ``target_vocab.json`` when the sides differ), ``source.spm`` / ``target.spm`` and
``tokenizer_config.json``. What transformers' Marian cannot hold is refused in one line,
naming the format that can.

**CTranslate2**, written with its spec API (``ctranslate2`` must be installed). Not with its
Transformers converter on the Hugging Face export: its Marian loader assumes OPUS-MT's layout.
It starts the decoder from a zero vector instead of the start token's embedding
(``start_from_zero_embedding``: OPUS-MT starts from ``<pad>``, whose vector is zero; ours from
``<bos>``, whose vector is learned) and drops the last row of the vocabulary (OPUS-MT's
``<pad>``; ours is a piece or a corpus tag): either changes every translation. The spec says
more than Marian can: pre-norm layers and their final LayerNorms, heads that do not split
d_model (``head_dim``), learned positions, any LayerNorm epsilon. The position table is given
explicitly (CTranslate2's own sinusoids follow tensor2tensor's frequencies, not the paper's),
1,024 rows for sinusoids so that its default limits never reach past it. CTranslate2 reads
SentencePiece *pieces*: the vocabularies are tokens, ``source.spm`` / ``target.spm`` make
them, ``add_source_eos`` ends each source with ``<eos>`` as our reader does, and a caller bans
corpus tags with ``suppress_sequences`` (the README says so), as our search bans them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.tokenizers import Tokenizer
from attenzione.model.transformer import Transformer
from attenzione.translator.export import (
    ExportRefused,
    marian_positions,
    marian_weights,
    model_card,
    pieces,
    spm_model,
    tag_tokens,
    write_json,
)
from attenzione.translator.weights import WEIGHTS_NAME, save_tensors

MARIAN_EPS = 1e-5  # transformers' Marian layers use nn.LayerNorm's default

HF_USE = """```python
from transformers import MarianMTModel, MarianTokenizer
tok, model = MarianTokenizer.from_pretrained("DIR"), MarianMTModel.from_pretrained("DIR")
batch = tok(["..."], return_tensors="pt", padding=True)
print(tok.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""


# ---------------------------------------------------------------------------- Hugging Face
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


# positions in the table of a sinusoidal model (CTranslate2's default max_input_length)
SINUSOID_ROWS = 1024
CT2_USE = """```python
import ctranslate2, sentencepiece
source = sentencepiece.SentencePieceProcessor(model_file="DIR/source.spm")
target = sentencepiece.SentencePieceProcessor(model_file="DIR/target.spm")
translator = ctranslate2.Translator("DIR")
out = translator.translate_batch([source.encode("...", out_type=str)], min_decoding_length=0)
print(target.decode(out[0].hypotheses[0]))
```

The source's `<eos>` is added by the model's config (`add_source_eos`). `min_decoding_length=0`
gives attenzione's own outputs: CTranslate2's default (1) forbids an empty translation.
"""


# ---------------------------------------------------------------------------- CTranslate2
def _ctranslate2() -> Any:
    try:
        from ctranslate2.specs import common_spec, transformer_spec
    except ImportError:
        raise ExportRefused(
            "ctranslate2: the ctranslate2 package is not installed (pip install ctranslate2)"
        ) from None
    return common_spec, transformer_spec


def write_ctranslate2(
    tmp: Path, model: Transformer, src: Tokenizer, tgt: Tokenizer, info: dict[str, Any]
) -> None:
    """Fill ``tmp`` with the CTranslate2 model of ``model`` and its vocabularies."""
    common_spec, transformer_spec = _ctranslate2()
    cfg = model.config
    src_pieces = pieces(src, cfg.src_vocab_size, "source")
    tgt_pieces = pieces(tgt, cfg.tgt_vocab_size, "target")
    rows = cfg.max_len if cfg.positions == "learned" else max(cfg.max_len, SINUSOID_ROWS)
    weights = marian_weights(model, rows)
    t = {name: tensor.numpy() for name, tensor in weights.tensors.items()}

    activation = {
        "relu": common_spec.Activation.RELU,
        "gelu": common_spec.Activation.GELU,
        "swish": common_spec.Activation.SWISH,
    }[cfg.activation]
    pre = cfg.norm == "pre"
    # CTranslate2 derives d_model / n_heads unless told: only an independent d_head is said
    shape: dict[str, Any] = {"pre_norm": pre, "activation": activation}
    if cfg.inner_dim != cfg.d_model:
        shape["head_dim"] = cfg.d_head
    encoder = transformer_spec.TransformerEncoderSpec(cfg.n_enc_layers, cfg.n_heads, **shape)
    decoder = transformer_spec.TransformerDecoderSpec(cfg.n_dec_layers, cfg.n_heads, **shape)
    spec = transformer_spec.TransformerSpec(encoder, decoder)

    def linear(layer: Any, *names: str) -> None:
        """Set a linear layer from one or more stacked ones (Q, K, V → one fused matrix)."""
        layer.weight = np.concatenate([t[f"{n}.weight"] for n in names])
        layer.bias = np.concatenate([t[f"{n}.bias"] for n in names])

    def norm(layer: Any, name: str) -> None:
        layer.gamma, layer.beta = t[f"{name}.weight"], t[f"{name}.bias"]

    def ffn(layer: Any, prefix: str) -> None:
        linear(layer.linear_0, f"{prefix}.fc1")
        linear(layer.linear_1, f"{prefix}.fc2")
        norm(layer.layer_norm, f"{prefix}.final_layer_norm")

    def self_attention(layer: Any, prefix: str) -> None:
        a = f"{prefix}.self_attn"
        linear(layer.linear[0], f"{a}.q_proj", f"{a}.k_proj", f"{a}.v_proj")
        linear(layer.linear[1], f"{a}.out_proj")
        norm(layer.layer_norm, f"{prefix}.self_attn_layer_norm")

    scale = math.sqrt(cfg.d_model) if cfg.scale_embeddings else 1.0
    for stack in (encoder, decoder):
        stack.scale_embeddings = scale
        stack.position_encodings.encodings = weights.positions.numpy()
    if weights.shared:
        encoder.embeddings[0].weight = decoder.embeddings.weight = t["model.shared.weight"]
    else:
        encoder.embeddings[0].weight = t["model.encoder.embed_tokens.weight"]
        decoder.embeddings.weight = t["model.decoder.embed_tokens.weight"]
    for i, layer in enumerate(encoder.layer):
        prefix = f"model.encoder.layers.{i}"
        self_attention(layer.self_attention, prefix)
        ffn(layer.ffn, prefix)
    for i, layer in enumerate(decoder.layer):
        prefix = f"model.decoder.layers.{i}"
        self_attention(layer.self_attention, prefix)
        cross = f"{prefix}.encoder_attn"
        linear(layer.attention.linear[0], f"{cross}.q_proj")
        linear(layer.attention.linear[1], f"{cross}.k_proj", f"{cross}.v_proj")
        linear(layer.attention.linear[2], f"{cross}.out_proj")
        norm(layer.attention.layer_norm, f"{prefix}.encoder_attn_layer_norm")
        ffn(layer.ffn, prefix)
    if pre:
        norm(encoder.layer_norm, "model.encoder.layer_norm")
        norm(decoder.layer_norm, "model.decoder.layer_norm")
    decoder.projection.weight = t.get("lm_head.weight", decoder.embeddings.weight)
    bias = t["final_logits_bias"].reshape(-1)
    if bias.any():
        decoder.projection.bias = bias

    config = spec.config
    config.unk_token = tgt_pieces[cfg.unk_id]
    config.bos_token = tgt_pieces[cfg.bos_id]
    config.eos_token = tgt_pieces[cfg.eos_id]
    config.decoder_start_token = tgt_pieces[cfg.start_id]
    config.add_source_bos = False
    config.add_source_eos = True  # our reader ends every source with <eos>
    config.layer_norm_epsilon = cfg.layer_norm_eps
    spec.register_source_vocabulary(src_pieces)
    spec.register_target_vocabulary(tgt_pieces)
    spec.validate()
    spec.optimize(quantization=None)  # float32; CTranslate2 quantizes at load (compute_type)
    spec.save(str(tmp))
    for side, tok in (("source", src), ("target", tgt)):
        proto = getattr(tok, "proto", None)
        if isinstance(proto, bytes):
            atomic.write_bytes(tmp / f"{side}.spm", proto)
    words = not isinstance(getattr(src, "proto", None), bytes)
    use = "The vocabularies are words, split as attenzione splits them.\n" if words else CT2_USE
    tags = tag_tokens(tgt)
    if tags:
        banned = ", ".join(f'["{tag}"]' for tag in tags)
        use += (
            f"\nThe corpus tags ({', '.join(tags)}) are source tokens: pass "
            f"`suppress_sequences=[{banned}]` so that no translation writes one, as ours.\n"
        )
    atomic.write_text(tmp / "README.md", model_card(info, "ctranslate2", use))  # last: complete
