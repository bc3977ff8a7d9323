"""Starting a run from a trained model (``attenzione train --init-from DIR``), even when the
new run has a different vocabulary.

Training a model for broad text from nothing spends its first CPU hours relearning what a
trained model already knows (word order, agreement, the attention patterns of translation).
A warm start keeps all of that: every weight of the body (attention, feed-forward, norms) is
copied from ``DIR``, and the embedding tables are carried over to the new vocabulary:

* a token the old vocabulary also has (the same piece, ``▁casa`` = ``▁casa``) keeps its
  old vector;
* a new token is spelled with the *old* tokenizer and starts from the mean of the vectors
  of those pieces (``▁Hello`` = mean(``▁He``, ``llo``)) — the old model read that text as
  those pieces, so the mean points where the model already understands it;
* a character the old tokenizer could not spell (``{``, ``«`` where the old vocabulary had
  none) starts from the old ``<unk>`` vector: that is what the old model saw for it;
* a byte piece (``<0xE2>``) the old vocabulary lacks keeps the new model's random vector.

With tied embeddings the output layer is the same table, so the softmax is carried over too.

The new run may also be *deeper* (``--enc-layers`` / ``--dec-layers`` above the old model's):
the old layers are kept, in order, and new ones are put between them, each after the old
layer it follows (3 → 6 is old, new, old, new, old, new). A new layer starts as an identity,
so the grown model translates as the old one did (exactly with pre-norm, up to LayerNorm's
``eps`` with post-norm) and training only adds:

* every sub-layer's output projection (attention ``out_proj``, the FFN's ``linear2``) starts
  at zero, so each sub-layer adds nothing to the residual stream: with pre-norm,
  ``x + 0 = x`` and the layer is the identity;
* with post-norm (``LN(x + 0)``) the old layer's last LayerNorm moves to the last new layer
  after it, and the old layer ends with a plain normalisation (gain 1, bias 0) instead: what
  it hands on is already normalised, a new layer's ``LN(z)`` gives ``z`` back, and the moved
  norm applies the old gain and bias at the end — the same output, up to LayerNorm's ``eps``.

The rest of a new layer (its Q/K/V and first FFN weights) keeps the new model's random
initialisation: gradients reach the zeroed projections first, and through them the rest.

The feed-forward sub-layers may also be *wider* (``--d-ff`` above the old model's): every
old hidden unit keeps its weights, and a new one gets the new model's random input weights
(a row of ``linear1``) and a zero output weight (a column of ``linear2``). Whatever it
computes is multiplied by zero, so the wider model translates exactly as the old one did,
and the zero columns are the first to get a gradient.

A run grows only what it asks for (``--enc-layers``/``--dec-layers``/``--d-ff``): a preset
that merely has more layers or a wider feed-forward is still refused. Fewer layers or a
narrower feed-forward than the old model's is refused (which to drop is not the warm
start's to guess).
The optimizer, the learning-rate schedule and the step count start afresh (give the run a
short warm-up). The shapes of the body must agree; a mismatch is a one-line error naming the
setting, given before any data is prepared. What the run started from (the model, its
training hours, how the vocabulary was carried over) is kept in ``RUN/init.json`` and copied
into every checkpoint's ``info.json``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from attenzione.config import ModelConfig
from attenzione.data.tokenizers import SPECIALS, WORD_START, Tokenizer, is_byte_piece
from attenzione.model.attention import MultiHeadAttention
from attenzione.model.layers import DecoderLayer, EncoderLayer, FeedForward
from attenzione.model.transformer import Transformer
from attenzione.translator import model_dir

# ModelConfig fields that must agree for the body's weights to mean the same thing
BODY_FIELDS = (
    "d_model",
    "n_heads",
    "d_head",
    "d_ff",
    "n_enc_layers",
    "n_dec_layers",
    "norm",
    "positions",
    "max_len",
    "share_src_tgt_embeddings",
    "tie_embeddings",
    "src_embed_dim",
)


@dataclass
class Transfer:
    """How the rows of one embedding table were initialised."""

    copied: int = 0  # the same token in the old vocabulary
    composed: int = 0  # the mean of the old pieces that spell it
    unknown: int = 0  # the old <unk>: the old tokenizer could not spell it
    fresh: int = 0  # random: a byte piece the old vocabulary lacks

    def __str__(self) -> str:
        return (
            f"{self.copied} copied, {self.composed} composed from old pieces, "
            f"{self.unknown} from the old <unk>, {self.fresh} new"
        )


def _spell(text: str, new_piece: str, old: Tokenizer, old_vocab: dict[str, int]) -> list[int]:
    """The old tokenizer's ids for ``new_piece`` (whose surface text is ``text``).

    A piece without the word-start mark continues a word; the old tokenizer, given it alone,
    would spell it as a word start, so its first piece is swapped for the continuation
    piece of the same text when the old vocabulary has one.
    """
    ids = old.encode(text)
    unk = old.unk_id
    ids = [i for i in ids if old.id_to_token(i) != WORD_START and i != unk]
    if ids and not new_piece.startswith(WORD_START):
        first = old.id_to_token(ids[0])
        if first.startswith(WORD_START) and first[1:] in old_vocab:
            ids[0] = old_vocab[first[1:]]
    return ids


@torch.no_grad()
def transfer_embeddings(
    new_table: Tensor, new_tok: Tokenizer, old_table: Tensor, old_tok: Tokenizer
) -> Transfer:
    """Fill ``new_table`` (V_new, D) in place from ``old_table`` (V_old, D), as the module
    docstring describes; returns the counts."""
    old_vocab = {old_tok.id_to_token(j): j for j in range(old_tok.vocab_size)}
    counts = Transfer()
    for i in range(new_tok.vocab_size):
        piece = new_tok.id_to_token(i)
        if piece in old_vocab:
            new_table[i] = old_table[old_vocab[piece]].to(new_table.dtype)
            counts.copied += 1
        elif is_byte_piece(piece) or piece in SPECIALS:
            counts.fresh += 1
        elif ids := _spell(piece.replace(WORD_START, " "), piece, old_tok, old_vocab):
            new_table[i] = old_table[ids].float().mean(0).to(new_table.dtype)
            counts.composed += 1
        else:
            new_table[i] = old_table[old_tok.unk_id].to(new_table.dtype)
            counts.unknown += 1
    return counts


def check_init_dir(init_dir: str | Path, shape: dict[str, Any], grow: Collection[str] = ()) -> Path:
    """The model directory ``--init-from`` names, checked against the ``shape`` the run will
    build (a preset's ModelConfig fields; None: not known yet, e.g. a GloVe file's width)
    before any data is prepared. ``grow``: the layer counts the run asks for itself
    (``n_enc_layers``, ``n_dec_layers``), which may be above the old model's."""
    found = _find(init_dir)
    defaults = {f.name: f.default for f in fields(ModelConfig)}
    _check_shape(init_dir, model_dir.read_config(found), {**defaults, **shape}, grow)
    return found


def _find(init_dir: str | Path) -> Path:
    found = model_dir.find_model_dir(init_dir)
    if found is None:
        raise FileNotFoundError(f"--init-from: no model directory at {init_dir}")
    return found


# BODY_FIELDS a warm start may increase (layers are added as identities, hidden units with
# zero output weights): the option that asks for it, and what a warm start can do with it
GROWABLE = {
    "n_enc_layers": ("--enc-layers", "add layers, not drop them"),
    "n_dec_layers": ("--dec-layers", "add layers, not drop them"),
    "d_ff": ("--d-ff", "widen the feed-forward, not narrow it"),
}


def _check_shape(
    init_dir: str | Path, old: ModelConfig, new: dict[str, Any], grow: Collection[str]
) -> None:
    differ = [
        f"{name} {getattr(old, name)!r} (this run: {new[name]!r})"
        for name in BODY_FIELDS
        if new[name] is not None and getattr(old, name) != new[name] and name not in grow
    ]
    if differ:
        raise ValueError(
            f"--init-from {init_dir}: its model has another shape: {', '.join(differ)}; "
            "choose the preset it was trained with"
        )
    for name, (option, what) in GROWABLE.items():
        if name in grow and new[name] < getattr(old, name):
            raise ValueError(
                f"--init-from {init_dir}: its model has {name} {getattr(old, name)} (this run: "
                f"{new[name]}); a warm start can {what}: give {option} "
                f"{getattr(old, name)} or more"
            )


def layer_plan(old_n: int, new_n: int) -> list[int | None]:
    """Which old layer each of ``new_n`` layers copies (None: a new layer). Each new layer
    comes after the old layer it follows; when they do not share out evenly the top of the
    stack takes the rest: 3 → 6 is ``[0, None, 1, None, 2, None]``, 3 → 4 ``[0, 1, 2, None]``.
    """
    if new_n < old_n:
        raise ValueError(f"cannot grow {old_n} layers into {new_n}")
    extra = new_n - old_n
    plan: list[int | None] = []
    for i in range(old_n):
        plan.append(i)
        plan.extend([None] * (extra // old_n + (1 if i >= old_n - extra % old_n else 0)))
    return plan


def _source_name(name: str, plans: dict[str, list[int | None]]) -> str | None:
    """The old model's name for the new model's parameter ``name`` (None: a new layer's)."""
    stack, _, rest = name.partition(".")
    if stack not in plans:
        return name
    index, _, rest = rest.partition(".")
    old_index = plans[stack][int(index)]
    return None if old_index is None else f"{stack}.{old_index}.{rest}"


@torch.no_grad()
def _start_as_identities(layers: nn.ModuleList, plan: list[int | None], post_norm: bool) -> None:
    """Make the new layers of one stack (``None`` in ``plan``) exact identities (see the
    module docstring); the old layers' weights are already copied."""
    for layer, old_index in zip(layers, plan, strict=True):
        if old_index is not None:
            continue
        for module in layer.modules():
            if isinstance(module, MultiHeadAttention):
                nn.init.zeros_(module.out_proj.weight)
                if module.out_proj.bias is not None:
                    nn.init.zeros_(module.out_proj.bias)
            elif isinstance(module, FeedForward):
                nn.init.zeros_(module.linear2.weight)
                nn.init.zeros_(module.linear2.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
    if not post_norm:
        return
    for j, old_index in enumerate(plan):
        last_new = j
        while last_new + 1 < len(plan) and plan[last_new + 1] is None:
            last_new += 1
        if old_index is None or last_new == j:
            continue
        # the old layer's last norm moves to the end of the new layers that follow it
        old_norm, new_norm = _final_norm(layers[j]), _final_norm(layers[last_new])
        new_norm.load_state_dict(old_norm.state_dict())
        nn.init.ones_(old_norm.weight)
        nn.init.zeros_(old_norm.bias)


def _copy_into(tensor: Tensor, old: Tensor, zero_rest: bool) -> None:
    """Copy ``old`` into the leading corner of ``tensor`` (the same shape, or larger along the
    feed-forward's hidden dimension); with ``zero_rest`` what it does not cover becomes zero
    (``linear2``'s new columns), else it keeps its random initialisation (``linear1``'s rows)."""
    if tensor.shape == old.shape:
        tensor.copy_(old.to(tensor.dtype))
        return
    if tensor.dim() != old.dim() or any(
        n < o for n, o in zip(tensor.shape, old.shape, strict=True)
    ):
        raise ValueError(f"cannot copy a {tuple(old.shape)} weight into {tuple(tensor.shape)}")
    if zero_rest:
        tensor.zero_()
    tensor[tuple(slice(0, n) for n in old.shape)].copy_(old.to(tensor.dtype))


def _final_norm(layer: nn.Module) -> nn.LayerNorm:
    """The LayerNorm a post-norm layer ends with (after its feed-forward sub-layer)."""
    assert isinstance(layer, EncoderLayer | DecoderLayer)
    return layer.res_ffn.norm


@torch.no_grad()
def copy_body(model: Transformer, old: Transformer) -> str:
    """Copy ``old``'s body (every weight but the embedding tables and the output layer) into
    ``model``, growing its stacks when ``model`` has more layers; says what it did."""
    old_state = old.state_dict()
    tables = {"src_embed.embedding.weight", "tgt_embed.embedding.weight", "generator.weight"}
    stacks = {
        "encoder_layers": (old.config.n_enc_layers, model.config.n_enc_layers, "encoder"),
        "decoder_layers": (old.config.n_dec_layers, model.config.n_dec_layers, "decoder"),
    }
    plans = {stack: layer_plan(old_n, new_n) for stack, (old_n, new_n, _) in stacks.items()}
    for name, tensor in model.state_dict().items():
        source = _source_name(name, plans)
        if name not in tables and source is not None and source in old_state:
            _copy_into(tensor, old_state[source], zero_rest=name.endswith("linear2.weight"))
    said = "body copied"
    old_ff, new_ff = old.config.d_ff, model.config.d_ff
    if new_ff > old_ff:
        said += f"; feed-forward widened from {old_ff} to {new_ff} (the new units add nothing yet)"
    for stack, (old_n, new_n, what) in stacks.items():
        if new_n > old_n:
            _start_as_identities(getattr(model, stack), plans[stack], model.config.norm == "post")
            said += (
                f"; {what} grown from {old_n} to {new_n} layers (the new ones start as identities)"
            )
    return said


def warm_start(
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    init_dir: str | Path,
    grow: Collection[str] = (),
) -> dict[str, Any]:
    """Initialise ``model`` (built for ``src_tok``/``tgt_tok``) from the model directory
    ``init_dir``, growing the layer counts named in ``grow`` (see :func:`check_init_dir`);
    returns what it started from (for ``init.json`` and ``info.json``)."""
    found = _find(init_dir)
    old_cfg = model_dir.read_config(found)
    shape = {name: getattr(model.config, name) for name in BODY_FIELDS}
    _check_shape(init_dir, old_cfg, shape, grow)
    old = model_dir.load_model(found)
    old_src, old_tgt = model_dir.load_tokenizers(found, old_cfg)
    body = copy_body(model, old)
    parts = []
    src = transfer_embeddings(model.src_embed.weight, src_tok, old.src_embed.weight, old_src)
    parts.append(f"source vocabulary {src_tok.vocab_size}: {src}")
    if model.tgt_embed is not model.src_embed:
        tgt = transfer_embeddings(model.tgt_embed.weight, tgt_tok, old.tgt_embed.weight, old_tgt)
        parts.append(f"target vocabulary {tgt_tok.vocab_size}: {tgt}")
    if not model.config.tie_embeddings:
        gen = transfer_embeddings(model.generator.weight, tgt_tok, old.generator.weight, old_tgt)
        parts.append(f"output layer: {gen}")
    info = model_dir.read_info(found)
    return {
        "model": str(found),  # as given (relative stays relative): the record travels
        "preset": info.get("preset"),
        "step": info.get("step"),
        # a model that was itself warm-started counts the hours of what it started from
        "train_hours": info.get("train_hours_with_init", info.get("train_hours")),
        "corpora": info.get("corpora", [info["data"]] if "data" in info else []),
        "carried_over": f"{body}; {'; '.join(parts)}",
        # whom that model credits: its data is still in the weights (info.json's attribution)
        **({"attribution": _credit_text(info["attribution"])} if info.get("attribution") else {}),
        # and what that model started from, so the whole chain stays on record
        **({"initialised_from": info["initialised_from"]} if "initialised_from" in info else {}),
    }


def _credit_text(attribution: object) -> str:
    """info.json's attribution as one text (older directories may hold a list per corpus)."""
    if isinstance(attribution, list):
        return "\n".join(str(a) for a in attribution)
    return str(attribution)
