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
* a token the old tokenizer cannot spell at all (a byte piece ``<0xE2>``, a character the
  old vocabulary never saw) keeps the new model's random initial vector.

With tied embeddings the output layer is the same table, so the softmax is carried over too.
Only the optimizer starts afresh (a short warm-up lets its moments settle). The shapes of
the body must agree; a mismatch is a one-line error naming the setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from attenzione import model_dir
from attenzione.data.tokenizers import SPECIALS, Tokenizer
from attenzione.model import Transformer

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
WORD_START = "\u2581"  # SentencePiece's word-start mark


@dataclass
class Transfer:
    """How the rows of one embedding table were initialised."""

    copied: int = 0  # the same token in the old vocabulary
    composed: int = 0  # the mean of the old pieces that spell it
    fresh: int = 0  # random: the old tokenizer cannot spell it

    def __str__(self) -> str:
        return f"{self.copied} copied, {self.composed} composed from old pieces, {self.fresh} new"


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
            continue
        text = piece.replace(WORD_START, " ")
        spellable = piece not in SPECIALS and not piece.startswith("<0x") and text.strip()
        ids = _spell(text, piece, old_tok, old_vocab) if spellable else []
        if ids:
            new_table[i] = old_table[ids].float().mean(0).to(new_table.dtype)
            counts.composed += 1
        else:
            counts.fresh += 1
    return counts


def find_init_dir(init_dir: str | Path) -> Path:
    """The model directory ``--init-from`` names (checked before any data is prepared)."""
    found = model_dir.find_model_dir(init_dir)
    if found is None:
        raise FileNotFoundError(f"--init-from: no model directory at {init_dir}")
    return found


def warm_start(
    model: Transformer, src_tok: Tokenizer, tgt_tok: Tokenizer, init_dir: str | Path
) -> str:
    """Initialise ``model`` (built for ``src_tok``/``tgt_tok``) from the model directory
    ``init_dir``; returns a one-line note of what was carried over."""
    found = find_init_dir(init_dir)
    old_cfg = model_dir.read_config(found)
    differ = [
        f"{name} {getattr(old_cfg, name)!r} (this run: {getattr(model.config, name)!r})"
        for name in BODY_FIELDS
        if getattr(old_cfg, name) != getattr(model.config, name)
    ]
    if differ:
        raise ValueError(
            f"--init-from {init_dir}: its model has another shape: {', '.join(differ)}; "
            "choose the preset it was trained with"
        )
    old = model_dir.load_model(found)
    old_src, old_tgt = model_dir.load_tokenizers(found, old_cfg)
    old_state = old.state_dict()
    tables = {"src_embed.embedding.weight", "tgt_embed.embedding.weight", "generator.weight"}
    own = model.state_dict()
    with torch.no_grad():
        for name, tensor in own.items():
            if name not in tables and name in old_state:
                tensor.copy_(old_state[name].to(tensor.dtype))
    parts = []
    src = transfer_embeddings(model.src_embed.weight, src_tok, old.src_embed.weight, old_src)
    parts.append(f"source vocabulary {src_tok.vocab_size}: {src}")
    if model.tgt_embed is not model.src_embed:
        tgt = transfer_embeddings(model.tgt_embed.weight, tgt_tok, old.tgt_embed.weight, old_tgt)
        parts.append(f"target vocabulary {tgt_tok.vocab_size}: {tgt}")
    if not model.config.tie_embeddings:
        gen = transfer_embeddings(model.generator.weight, tgt_tok, old.generator.weight, old_tgt)
        parts.append(f"output layer: {gen}")
    return f"initialised from {found}: body copied; " + "; ".join(parts)
