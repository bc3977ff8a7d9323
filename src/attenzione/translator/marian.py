"""Hugging Face Marian checkpoints (OPUS-MT) as our own Transformer, exactly.

Helsinki-NLP publishes over a thousand OPUS-MT models as transformers' ``MarianMTModel``: the
paper's encoder–decoder Transformer, trained with Marian. This module reads such a directory
into a :class:`ModelConfig` and our state dict: our Transformer computes what transformers
does, to float rounding (logits within 1e-4, the same greedy and beam outputs), without it.

What differs between the two and how it is carried over, one convention at a time:

* **Positions**: Marian's sinusoids put every sine first, then every cosine
  (``sinusoid_layout="halves"``). A checkpoint that stores a table other than that sinusoid
  gets it as learned positions (encoder and decoder must then share it: ours do).
* **Embeddings**: × √d_model only with ``scale_embedding`` (``scale_embeddings``); one matrix
  for the source, the target and the output layer in OPUS-MT's joint vocabulary
  (``share_src_tgt_embeddings`` and ``tie_embeddings``, each read from the config).
* **Attention**: ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` under the same names; heads
  are contiguous slices of d_head in both. Scaling by 1/√d_head, post-norm, LayerNorm ε 1e-5, and
  biases everywhere are the same in both.
* **Feed-forward**: ``activation_function`` (swish in OPUS-MT) becomes ``activation``.
* **Output**: ``final_logits_bias`` becomes the output layer's bias (``output_bias``) when it
  is not all zeros.
* **Special tokens**: Marian starts decoding from its padding token
  (``decoder_start_id = pad_id``) and has no ``<bos>``: ``bos_id`` names ``<unk>``, a token no
  decoder starts from, which decoding drops as transformers' ``skip_special_tokens`` does.

Anything else (unequal encoder and decoder widths, a weight left unused or of another shape or
type, a size that is not a positive int, a model this machine could not hold) is refused in
one line, before anything is allocated. Weights come from ``model.safetensors`` (sharded or
not) or from ``pytorch_model.bin`` through ``torch.load(weights_only=True)``, which reads
tensors and never runs code. Every file is read through
:func:`~attenzione.translator.weights.member`: none through a link that leads out of the
directory.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attenzione.config import ModelConfig
from attenzione.data.jsonfile import read_json, read_json_object
from attenzione.model.positional import sinusoidal_table
from attenzione.model.transformer import Transformer
from attenzione.search.registry import Terms
from attenzione.translator.weights import (
    build_model,
    check_dtypes,
    check_finite,
    check_fits_memory,
    check_state,
    load_pickled,
    member,
)
from attenzione.translator.weights import load_weights_file as read_safetensors

HF_CONFIG = "config.json"
HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
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
# Per layer: Marian's names → ours (the attention projections are stacked apart)
ENCODER_NORMS = {"self_attn_layer_norm": "res_attn.norm", "final_layer_norm": "res_ffn.norm"}
DECODER_NORMS = {
    "self_attn_layer_norm": "res_self.norm",
    "encoder_attn_layer_norm": "res_cross.norm",
    "final_layer_norm": "res_ffn.norm",
}


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
    :func:`read_hf_config` gives it) and its tensors. ``unk_id``: ``<unk>``'s id in the
    vocabulary (None: the smallest id that is neither padding nor ``<eos>``)."""
    cfg = model_config(hf, unk_id=unk_id, where=where)  # its memory checked: nothing built yet
    state = {k.removeprefix("model."): v for k, v in hf_state.items()}
    d, d_ff, tgt_vocab = cfg.d_model, cfg.d_ff, cfg.tgt_vocab_size
    shared, tied = cfg.share_src_tgt_embeddings, cfg.tie_embeddings
    ours: dict[str, Tensor] = {}
    positions = _positions(state, cfg.max_len, d, where)
    if positions is not None:
        ours["positions.embedding.weight"] = positions
    rows = (cfg.src_vocab_size, tgt_vocab, tgt_vocab, d)
    src, tgt, out = _embeddings(state, shared, tied, where, rows)
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
    for side, n_layers, norms in (
        ("encoder", int(hf["encoder_layers"]), ENCODER_NORMS),
        ("decoder", int(hf["decoder_layers"]), DECODER_NORMS),
    ):
        for i in range(n_layers):
            ours.update(
                _layer(state, f"{side}.layers.{i}.", f"{side}_layers.{i}.", norms, where, d, d_ff)
            )
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
            sinusoid_layout="halves",
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
    sinusoid = sinusoidal_table(max_pos, d, "halves")
    if all(t.shape == sinusoid.shape and torch.allclose(t, sinusoid, atol=1e-6) for t in stored):
        return None
    if len(stored) == 2 and torch.equal(stored[0], stored[1]) and stored[0].shape == (max_pos, d):
        return stored[0]
    raise ValueError(
        f"{where}: its position tables are not Marian's sinusoids and not one shared table"
    )


def _layer(
    state: dict[str, Tensor],
    theirs: str,
    ours: str,
    norms: dict[str, str],
    where: str,
    d: int,
    d_ff: int,
) -> dict[str, Tensor]:
    """One encoder or decoder layer's tensors under our names (each removed from ``state``),
    each of the shape a layer of width ``d`` and feed-forward width ``d_ff`` has."""
    out: dict[str, Tensor] = {}
    attns = {"self_attn": "self_attn"}
    if "encoder_attn_layer_norm" in norms:
        attns["encoder_attn"] = "cross_attn"
    shapes = {"weight": (d, d), "bias": (d,)}
    for their_attn, our_attn in attns.items():
        a, b = f"{theirs}{their_attn}.", f"{ours}{our_attn}."
        for kind, shape in shapes.items():
            for part in ("q", "k", "v", "out"):
                name = f"{part}_proj.{kind}"
                out[f"{b}{name}"] = _pop(state, f"{a}{name}", where, shape)
    ffn = {"weight": ((d_ff, d), (d, d_ff)), "bias": ((d_ff,), (d,))}
    for kind, (first, second) in ffn.items():
        out[f"{ours}ffn.linear1.{kind}"] = _pop(state, f"{theirs}fc1.{kind}", where, first)
        out[f"{ours}ffn.linear2.{kind}"] = _pop(state, f"{theirs}fc2.{kind}", where, second)
        for their_norm, our_norm in norms.items():
            name = f"{theirs}{their_norm}.{kind}"
            out[f"{ours}{our_norm}.{kind}"] = _pop(state, name, where, (d,))
    return out


def _pop(state: dict[str, Tensor], name: str, where: str, shape: tuple[int, ...]) -> Tensor:
    if name not in state:
        raise ValueError(f"{where} lacks {name}")
    t = state.pop(name)
    if tuple(t.shape) != shape:
        raise ValueError(f"{where}: {name} is {tuple(t.shape)}, not {shape}")
    return t


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


# ---------------------------------------------------------------------------- the hub
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?")
# what an import reads of a hub repository: the small files, then one set of weights
HUB_FILES = ["config.json", "*.spm", "vocab.json", "target_vocab.json", "*.md", "*_config.json"]
HUB_WEIGHTS = (["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"],
               ["pytorch_model.bin"])  # fmt: skip


def download(repo_id: str) -> Path:
    """The directory of the Hugging Face hub model ``repo_id`` (downloaded with
    huggingface_hub, or its cached copy when ``HF_HUB_OFFLINE`` is set); every failure — no
    huggingface_hub, no network, no such model — is a one-line ValueError."""
    if not HUB_ID.fullmatch(repo_id):
        raise ValueError(f"{repo_id} is neither a directory nor a hub id (owner/name)")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ValueError(
            f"{repo_id} is not a directory here, and downloading it from the Hugging Face hub "
            "needs huggingface_hub (pip install huggingface_hub)"
        ) from None
    path = Path()
    for weights in HUB_WEIGHTS:  # safetensors when the repository has them, else the pickle
        try:
            path = Path(snapshot_download(repo_id, allow_patterns=[*HUB_FILES, *weights]))
        except Exception as exc:  # offline, no such repository, a network error …: one line
            first = (str(exc).strip().splitlines() or [""])[0].split(". ")[0][:160]
            raise ValueError(
                f"could not download {repo_id} from the Hugging Face hub ({type(exc).__name__}"
                f"{': ' + first if first else ''}); without internet, download the model "
                "elsewhere and give its directory"
            ) from None
        if any((path / name).is_file() for name in HF_WEIGHTS):
            return path
    return path  # no weights at all: read_hf_weights names what is missing


# ---------------------------------------------------------------------------- info.json
OPUS_NAME = re.compile(r"opus-mt-(?:tc-(?:big|base)-)?([a-z]{2,3})-([a-z]{2,3})$")
LICENCE_LINE = re.compile(r"^license:\s*(\S+)\s*$", re.MULTILINE)


def language_pair(directory: str | Path, origin: str) -> tuple[str, str] | None:
    """The pair a Marian directory translates: its ``tokenizer_config.json``'s
    ``source_lang``/``target_lang``, else an ``opus-mt-SRC-TGT`` name (None: neither says)."""
    path = member(directory, "tokenizer_config.json")
    if path.is_file():
        try:
            tok = read_json(path)
        except ValueError:  # damaged: the tokenizer's reader says so, in one line
            tok = {}
        src, tgt = (
            tok.get(k) if isinstance(tok, dict) else None for k in ("source_lang", "target_lang")
        )
        if isinstance(src, str) and isinstance(tgt, str) and src.isalpha() and tgt.isalpha():
            return src.lower(), tgt.lower()
    for name in (origin.rstrip("/").rsplit("/", 1)[-1], Path(directory).name):
        found = OPUS_NAME.search(name)
        if found:
            return found.group(1), found.group(2)
    return None


def licence(directory: str | Path) -> str:
    """What the model card (``README.md``'s front matter) says the licence is."""
    path = member(directory, "README.md")
    if path.is_file():
        found = LICENCE_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1).strip("'\"")
    return "see the original model card"


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
