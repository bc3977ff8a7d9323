"""The CTranslate2 exporter: a model ``ctranslate2.Translator`` loads.

Written with its spec API (``ctranslate2`` must be installed). Not with its
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
from attenzione.data.tokenizers import Tokenizer
from attenzione.interop.common import (
    ExportRefused,
    marian_weights,
    model_card,
    pieces,
    tag_tokens,
)
from attenzione.interop.registry import register_exporter
from attenzione.model.transformer import Transformer

_VOCABS = tuple(f"{side}_vocabulary.{ext}" for side in ("shared", "source", "target")
                for ext in ("json", "txt"))  # fmt: skip
# every name an export may write: a re-export replaces these and keeps the rest
WRITES = frozenset(("config.json", "model.bin", *_VOCABS, "source.spm", "target.spm", "README.md"))

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


@register_exporter("ctranslate2", writes=WRITES, needs=("config.json", "model.bin"))
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
