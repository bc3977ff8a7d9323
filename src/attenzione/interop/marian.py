"""Hugging Face Marian checkpoints (OPUS-MT) as our own Transformer, exactly.

Helsinki-NLP publishes over a thousand OPUS-MT models as transformers' ``MarianMTModel``: the
paper's encoder–decoder Transformer, trained with Marian. This module reads such a directory
into a :class:`ModelConfig` and our state dict: our Transformer computes what transformers
does, to float rounding (logits within 1e-4, the same greedy and beam outputs), without it.

What differs between the two and how it is carried over, one convention at a time:

* **Positions**: Marian's sinusoids put every sine first, then every cosine. The import
  brings every tensor into our order, sines and cosines interleaved (one permutation of the
  residual stream, exact: :mod:`~attenzione.interop.names`), so the model is an ordinary one
  of ours. A checkpoint that stores a table other than that sinusoid gets it as learned
  positions (encoder and decoder must then share it: ours do).
* **Embeddings**: × √d_model only with ``scale_embedding`` (``scale_embeddings``); one matrix
  for the source, the target and the output layer in OPUS-MT's joint vocabulary
  (``share_src_tgt_embeddings`` and ``tie_embeddings``, each read from the config).
* **Names**: every tensor's, in the one table import and export share
  (:mod:`~attenzione.interop.names`).
* **Attention**: ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` under the same names; heads
  are contiguous slices of d_head in both. Scaling by 1/√d_head, post-norm, LayerNorm ε 1e-5, and
  biases everywhere are the same in both.
* **Feed-forward**: ``activation_function`` (swish in OPUS-MT) becomes ``activation``.
* **Output**: ``final_logits_bias`` becomes the output layer's bias (``output_bias``) when it
  is not all zeros.
* **Special tokens**: Marian starts decoding from its padding token
  (``decoder_start_id = pad_id``) and has no ``<bos>``: ``bos_id`` names ``<unk>``, a token no
  decoder starts from, which decoding drops as transformers' ``skip_special_tokens`` does.
  The core needs to know no more: a decoder's first position is its start token, real
  whatever its id (:mod:`attenzione.model.masks`), and the registered ``start-token``
  constraint keeps such a decoder from writing ``<pad>``, as OPUS-MT's ``bad_words_ids`` do.

Anything else (unequal encoder and decoder widths, a weight left unused or of another shape or
type, a size that is not a positive int, a model this machine could not hold) is refused in
one line, before anything is allocated. Weights come from ``model.safetensors`` (sharded or
not) or from ``pytorch_model.bin`` through ``torch.load(weights_only=True)``, which reads
tensors and never runs code. Every file is read through
:func:`~attenzione.weights.member`: none through a link that leads out of the
directory.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attenzione.config import ModelConfig
from attenzione.data.jsonfile import read_json, read_json_object
from attenzione.data.marian_tokenizer import MarianVocabTokenizer
from attenzione.interop import hub, names
from attenzione.interop.registry import Imported, register_importer
from attenzione.model.positional import sinusoidal_table
from attenzione.model.transformer import Transformer
from attenzione.search.registry import Terms
from attenzione.weights import (
    build_model,
    check_dtypes,
    check_finite,
    check_fits_memory,
    check_state,
    load_pickled,
    member,
)
from attenzione.weights import load_weights_file as read_safetensors

HF_CONFIG = "config.json"
HF_WEIGHTS = hub.HF_WEIGHTS
# What transformers' MarianConfig assumes of a field config.json leaves out
MARIAN_DEFAULTS: dict[str, Any] = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024,
    "encoder_layers": 12, "decoder_layers": 12, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096,
    "encoder_attention_heads": 16, "decoder_attention_heads": 16, "d_model": 1024,
    "activation_function": "gelu", "dropout": 0.1, "attention_dropout": 0.0,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0,
    "decoder_start_token_id": 58100, "share_encoder_decoder_embeddings": True,
    "tie_word_embeddings": True,
}  # fmt: skip
# The fields of MARIAN_DEFAULTS that are sizes (a positive int) and ids (an int >= 0)
SIZES = ("vocab_size", "max_position_embeddings", "encoder_layers", "decoder_layers",
         "encoder_ffn_dim", "decoder_ffn_dim", "encoder_attention_heads",
         "decoder_attention_heads", "d_model")  # fmt: skip
IDS = ("pad_token_id", "eos_token_id", "decoder_start_token_id")
# transformers' activation names → ours (ACT2FN: "swish" and "silu" are both SiLU)
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "swish", "silu": "swish"}
GENERIC = ["carry", "split", "inline-tags"]  # the text steps an import gets: any language


# ---------------------------------------------------------------------------- files
def read_hf_config(directory: str | Path) -> dict[str, Any]:
    """``config.json`` of a Hugging Face directory, with MarianConfig's defaults filled in;
    anything but a Marian config is a ValueError."""
    path = member(directory, HF_CONFIG)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: not a Hugging Face model directory")
    data = read_json_object(path)
    if data.get("model_type") != "marian":
        raise ValueError(
            f"{path} describes a {data.get('model_type')!r} model: only Marian models "
            "(model_type 'marian', as OPUS-MT's) can be imported"
        )
    given = {k: v for k, v in data.items() if v is not None}
    start = {"decoder_start_token_id": given.get("pad_token_id", MARIAN_DEFAULTS["pad_token_id"])}
    hf = {**MARIAN_DEFAULTS, **start, **given}  # Marian's decoder starts from <pad>
    for key, default in MARIAN_DEFAULTS.items():  # MarianConfig's types: ints, booleans, floats
        value = hf[key]
        if isinstance(default, int) and type(value) is not type(default):
            kind = type(default).__name__
            raise ValueError(f"{path}: {key} must be a {kind}, not {_brief(value)}")
        if isinstance(default, float) and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"{path}: {key} must be a number, not {_brief(value)}")
    for key in (*SIZES, "decoder_vocab_size"):
        value = hf[key]
        if value is not None and (type(value) is not int or value <= 0):
            raise ValueError(f"{path}: {key} must be a positive int, not {_brief(value)}")
    for key in IDS:
        if hf[key] < 0:
            raise ValueError(f"{path}: {key} must be an id (an int >= 0), not {hf[key]}")
    return hf


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"a {type(value).__name__}"


def read_hf_weights(directory: str | Path) -> dict[str, Tensor]:
    """The tensors of a Hugging Face directory: ``model.safetensors`` (or its shards), else
    ``pytorch_model.bin`` read with ``weights_only=True`` (tensors only, no code runs)."""
    directory = Path(directory)
    single, index, pickled = (member(directory, name) for name in HF_WEIGHTS)
    if single.is_file():
        state = read_safetensors(single)
        check_dtypes(state, str(single))
        return state
    if index.is_file():
        data = read_json(index)  # its errors name the file
        try:
            weight_map = data["weight_map"]
            shards = sorted(set(weight_map.values()))
            if not all(isinstance(shard, str) for shard in shards):
                raise TypeError
        except (KeyError, TypeError, AttributeError):
            raise ValueError(f"{index} is not a safetensors index") from None
        state = {}
        for shard in shards:
            path = member(directory, shard)
            state.update(read_safetensors(path))
            check_dtypes(state, str(path))
        return state
    if pickled.is_file():
        loaded = load_pickled(pickled, "a weights file")
        if not isinstance(loaded, dict) or not all(isinstance(t, Tensor) for t in loaded.values()):
            raise ValueError(f"{pickled} does not hold a dict of tensors")
        check_dtypes(loaded, str(pickled))
        check_finite(loaded, str(pickled))
        return loaded
    names = ", ".join(HF_WEIGHTS[::2])
    raise FileNotFoundError(f"{directory} holds no weights ({names})")


# ---------------------------------------------------------------------------- conversion
def convert(
    hf: dict[str, Any],
    hf_state: dict[str, Tensor],
    *,
    unk_id: int | None = None,
    where: str = "the checkpoint",
) -> tuple[ModelConfig, dict[str, Tensor]]:
    """Our config and state dict (untied names only) for a Marian ``hf`` config (as
    :func:`read_hf_config` gives it) and its tensors, renamed by :mod:`~attenzione.interop.names`'
    table and brought into our residual-stream order. ``unk_id``: ``<unk>``'s id in the
    vocabulary (None: the smallest id that is neither padding nor ``<eos>``)."""
    cfg = model_config(hf, unk_id=unk_id, where=where)  # its memory checked: nothing built yet
    state = {k.removeprefix("model."): v for k, v in hf_state.items()}
    d, tgt_vocab = cfg.d_model, cfg.tgt_vocab_size
    shared, tied = cfg.share_src_tgt_embeddings, cfg.tie_embeddings
    order = names.marian_order(d)
    mine = _shapes(cfg)
    positions = _positions(state, cfg.max_len, d, where)
    ours: dict[str, Tensor] = {}
    if positions is not None:
        ours["positions.embedding.weight"] = names.permute(positions, "reads", torch.argsort(order))
    rows = (cfg.src_vocab_size, tgt_vocab, tgt_vocab, d)
    src, tgt, out = (
        names.permute(t, "reads", torch.argsort(order))
        for t in _embeddings(state, shared, tied, where, rows)
    )
    # one matrix where the checkpoint's are one (OPUS-MT's joint vocabulary: all three)
    shared = src.shape == tgt.shape and torch.equal(src, tgt)
    tied = torch.equal(out, tgt)
    ours["src_embed.embedding.weight"] = src
    if not shared:
        ours["tgt_embed.embedding.weight"] = tgt
    if not tied:
        ours["generator.weight"] = out
    bias = state.pop("final_logits_bias", None)
    if bias is not None and bias.numel() != tgt_vocab:
        raise ValueError(f"{where}: final_logits_bias has {bias.numel()} values, not {tgt_vocab}")
    if bias is not None and bool(bias.any()):
        ours["generator.bias"] = bias.reshape(tgt_vocab)
    inner = ("encoder_layers.", "decoder_layers.")
    layers = [r for r in names.table(cfg) if r.ours.startswith(inner)]
    bare = [names.Name(r.ours, r.theirs.removeprefix("model."), r.stream) for r in layers]
    for r in bare:  # each layer tensor there, of the shape a layer of this width has
        if r.theirs not in state:
            raise ValueError(f"{where} lacks {r.theirs}")
        if tuple(state[r.theirs].shape) != mine[r.ours]:
            shape = tuple(state[r.theirs].shape)
            raise ValueError(f"{where}: {r.theirs} is {shape}, not {mine[r.ours]}")
    ours.update(names.to_ours(state, bare, order))
    if state:
        left = ", ".join(sorted(state)[:4])
        raise ValueError(f"{where} holds weights a Marian model does not use: {left}")
    cfg = cfg.replace(
        positions="sinusoidal" if positions is None else "learned",
        tie_embeddings=tied,
        share_src_tgt_embeddings=shared,
        output_bias="generator.bias" in ours,
    )
    return cfg, ours


def _shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """The shape of each tensor of a network of ``cfg`` (built on the meta device: no memory)."""
    with torch.device("meta"):
        return {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}


def model_config(
    hf: dict[str, Any], *, unk_id: int | None = None, where: str = "the checkpoint"
) -> ModelConfig:
    """Our config of the Marian model ``hf`` describes, as the config alone tells it
    (sinusoidal positions, the embeddings shared and tied as it says, no output bias: what
    :func:`convert` then reads off the weights can only make it smaller), refused in one line
    if this machine could not hold the model (the position table included): checked before
    a weight is read or a table built."""
    d, heads = _same(hf, "d_model", where), _same(hf, "attention_heads", where)
    d_ff = _same(hf, "ffn_dim", where)
    if d % heads:
        raise ValueError(f"{where}: d_model {d} is not a multiple of {heads} heads")
    activation = ACTIVATIONS.get(str(hf["activation_function"]))
    if activation is None:
        raise ValueError(
            f"{where}: activation_function {_brief(hf['activation_function'])} is not one this "
            f"package has ({', '.join(ACTIVATIONS)})"
        )
    shared, tied = bool(hf["share_encoder_decoder_embeddings"]), bool(hf["tie_word_embeddings"])
    vocab = int(hf["vocab_size"])
    tgt_vocab = vocab if shared else int(hf["decoder_vocab_size"] or vocab)
    pad, eos = int(hf["pad_token_id"]), int(hf["eos_token_id"])
    if unk_id is None:
        unk_id = min(set(range(3)) - {pad, eos})
    try:
        cfg = ModelConfig(
            src_vocab_size=vocab,
            tgt_vocab_size=tgt_vocab,
            d_model=d,
            n_heads=heads,
            d_head=d // heads,
            d_ff=d_ff,
            n_enc_layers=int(hf["encoder_layers"]),
            n_dec_layers=int(hf["decoder_layers"]),
            dropout=float(hf["dropout"]),
            attn_dropout=float(hf["attention_dropout"]),
            max_len=int(hf["max_position_embeddings"]),
            positions="sinusoidal",
            norm="post",
            tie_embeddings=tied,
            share_src_tgt_embeddings=shared,
            pad_id=pad,
            bos_id=unk_id,  # Marian has no <bos>: see the module docstring
            eos_id=eos,
            unk_id=unk_id,
            activation=activation,  # type: ignore[arg-type]
            scale_embeddings=bool(hf["scale_embedding"]),
            output_bias=False,
            layer_norm_eps=1e-5,  # transformers' nn.LayerNorm default, which Marian keeps
            decoder_start_id=int(hf["decoder_start_token_id"]),
        )
    except ValueError as exc:
        raise ValueError(f"{where}/{HF_CONFIG}: {exc}") from None
    check_fits_memory(cfg, f"{where}/{HF_CONFIG}")
    return cfg


def _same(hf: dict[str, Any], what: str, where: str = "the checkpoint") -> int:
    """The encoder's and the decoder's ``what`` (heads, FFN width), which ours share."""
    enc, dec = hf.get(f"encoder_{what}", hf.get(what)), hf.get(f"decoder_{what}", hf.get(what))
    if not isinstance(enc, int) or enc <= 0:
        raise ValueError(f"{where}/{HF_CONFIG}: {what} must be a positive int, not {_brief(enc)}")
    if enc != dec:
        raise ValueError(
            f"{where}/{HF_CONFIG}: encoder_{what} {enc} and decoder_{what} {dec} differ, and "
            "this package's encoder and decoder share one"
        )
    return int(enc)


def _embeddings(
    state: dict[str, Tensor], shared: bool, tied: bool, where: str, rows: tuple[int, ...]
) -> tuple[Tensor, Tensor, Tensor]:
    """The source, target and output matrices the checkpoint's model reads (removed from
    ``state``). Each side's own matrix comes first: transformers 5 reads ``encoder.embed_tokens``
    and ``decoder.embed_tokens`` unless ``tie_word_embeddings`` ties them to ``shared``, and
    a checkpoint of one matrix (what ``save_pretrained`` writes for OPUS-MT) stores it once.
    ``rows``: the source, target and output vocabulary sizes, then d_model."""
    found = {
        name: state.pop(f"{name}.weight")
        for name in ("shared", "encoder.embed_tokens", "decoder.embed_tokens", "lm_head")
        if f"{name}.weight" in state
    }
    joint = ["shared", "decoder.embed_tokens", "encoder.embed_tokens"] if shared else []
    src = _first(found, ["encoder.embed_tokens", *joint, *(["lm_head"] if shared and tied else [])])
    tgt = _first(found, ["decoder.embed_tokens", *joint, *(["lm_head"] if tied else [])])
    out = tgt if tied else _first(found, ["lm_head"])
    names = ("encoder.embed_tokens", "decoder.embed_tokens", "lm_head")
    for name, t, size in zip(names, (src, tgt, out), rows[:3], strict=True):
        if t is None:
            raise ValueError(f"{where} lacks {name}.weight")
        if tuple(t.shape) != (size, rows[3]):
            raise ValueError(f"{where}: {name} is {tuple(t.shape)}, not {(size, rows[3])}")
    assert src is not None and tgt is not None and out is not None
    return src, tgt, out


def _first(found: dict[str, Tensor], names: list[str]) -> Tensor | None:
    return next((found[n] for n in names if n in found), None)


def _positions(state: dict[str, Tensor], max_pos: int, d: int, where: str) -> Tensor | None:
    """None when the checkpoint's position tables (if it stores any) are Marian's sinusoid
    (to 1e-6); else the one table encoder and decoder share, as learned positions."""
    tables = [state.pop(f"{side}.embed_positions.weight", None) for side in ("encoder", "decoder")]
    stored = [t.float() for t in tables if t is not None]
    sinusoid = sinusoidal_table(max_pos, d)[:, names.marian_order(d)]  # to the bit
    if all(t.shape == sinusoid.shape and torch.allclose(t, sinusoid, atol=1e-6) for t in stored):
        return None
    if len(stored) == 2 and torch.equal(stored[0], stored[1]) and stored[0].shape == (max_pos, d):
        return stored[0]
    raise ValueError(
        f"{where}: its position tables are not Marian's sinusoids and not one shared table"
    )


def load_marian(directory: str | Path, *, unk_id: int | None = None) -> Transformer:
    """Our :class:`Transformer` with the weights of the Hugging Face Marian ``directory``;
    the config is checked (sizes, types, this machine's memory) before a weight is read."""
    hf = read_hf_config(directory)
    model_config(hf, unk_id=unk_id, where=str(directory))
    cfg, state = convert(hf, read_hf_weights(directory), unk_id=unk_id, where=str(directory))
    model = build_model(cfg, str(Path(directory) / HF_CONFIG))
    check_state(model, state, str(directory))
    own = model.state_dict()
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()}, strict=False)
    return model.eval()


# ---------------------------------------------------------------------------- the importer
def import_info(
    model: Transformer, origin: str, pair: tuple[str, str], licence: str
) -> dict[str, Any]:
    """The ``info.json`` of an imported model: its origin, pair and licence; only the text steps
    that know no language (markup, addresses, long lines) and no ranking term, so beam search
    ranks as transformers' does (length-normalised log-prob)."""
    return {
        "source_language": pair[0],
        "target_language": pair[1],
        "origin": {"imported_from": origin, "format": "Hugging Face MarianMTModel"},
        "licence": licence,
        "attribution": f"converted from {origin}; its authors and data: the original model card",
        "parameters": model.num_parameters(),
        "max_src_tokens": model.config.max_len - 1,
        "number_format": "keep",
        "pipeline": {"steps": GENERIC, "terms": dict(Terms.none())},
    }


def is_marian(directory: Path) -> bool:
    """Whether ``directory`` is a Hugging Face directory (a ``config.json``); whether its config
    is a Marian one is :func:`read_hf_config`'s to say, in one line."""
    return member(directory, HF_CONFIG).is_file()


@register_importer("marian", detect=is_marian, describes="a Hugging Face MarianMTModel directory")
def load(
    directory: Path, *, origin: str | None = None, pair: tuple[str, str] | None = None
) -> Imported:
    """The model of a Hugging Face Marian ``directory`` with its two tokenizers and the
    ``info.json`` an import writes. ``origin``: where it came from (a hub id; the directory by
    default); ``pair``: the languages, when the directory does not say them."""
    origin = origin or str(Path(directory).resolve())
    src_tok = MarianVocabTokenizer.from_hf_dir(directory, side="source")
    tgt_tok = MarianVocabTokenizer.from_hf_dir(directory, side="target")
    model = load_marian(directory, unk_id=src_tok.unk_id)
    cfg = model.config
    for side, tok in (("source", src_tok), ("target", tgt_tok)):
        theirs = (tok.pad_id, tok.eos_id, tok.unk_id)
        if theirs != (cfg.pad_id, cfg.eos_id, cfg.unk_id):
            raise ValueError(
                f"{directory}: the {side} vocabulary numbers <pad>, </s>, <unk> {theirs} "
                f"but config.json says {(cfg.pad_id, cfg.eos_id, cfg.unk_id)}"
            )
    pair = pair or hub.language_pair(directory, origin)
    if pair is None:
        raise ValueError(
            f"cannot tell which pair {origin} translates: give --src-lang and --tgt-lang"
        )
    info = import_info(model, origin, pair, hub.licence(directory))
    return Imported(model, src_tok, tgt_tok, info)
