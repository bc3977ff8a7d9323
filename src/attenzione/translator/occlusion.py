"""Attention is not alignment: occlusion attribution beside the cross-attention of every head.

A learner reads a cross-attention map as "which source word each target piece comes from".
This module puts the question to the model instead: for each source word, the sentence is
read again without it, the same translation is teacher-forced, and the change of each target
piece's log-probability is measured —

    importance(t, w) = log p(y_t | x) − log p(y_t | x without word w)

(positive: the piece needed the word). No gradients are needed. Beside it, each layer's and
head's cross-attention from the same teacher-forced pass, summed over each word's pieces, and
two agreements per head: ``top1`` (the share of target pieces whose most-attended word is also
the word whose removal costs them most) and ``correlation`` (Pearson's r of the two maps
across words, averaged over the target pieces). Heads that follow the words that matter score
high; many do not.

Words are the source's pieces grouped where a piece begins with SentencePiece's ``▁`` (the
final ``<eos>`` and a corpus tag are never removed). A word the sentence does not contain
leaves its input as it was, so its importance is exactly zero — each variant is its own batch
of one, the same computation as the full sentence's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from attenzione.model.transformer import Transformer
from attenzione.viz.maps import display_tokens

WORD_START = "▁"


def source_words(pieces: Sequence[str], keep: Sequence[bool]) -> list[list[int]]:
    """The piece indices of each word: a new word where a piece begins with ``▁`` (or follows
    a kept piece); pieces flagged in ``keep`` (``<eos>``, a tag) belong to none."""
    words: list[list[int]] = []
    for i, piece in enumerate(pieces):
        if keep[i]:
            continue
        if i == 0 or keep[i - 1] or piece.startswith(WORD_START) or not words:
            words.append([i])
        else:
            words[-1].append(i)
    return words


def _target_logprobs(model: Transformer, src: list[int], fed: list[int], out: list[int]) -> Tensor:
    """log p of each piece of ``out`` teacher-forced after ``fed`` on source ``src``: (T,)."""
    s = torch.tensor([src], dtype=torch.long)
    t = torch.tensor([fed], dtype=torch.long)
    logits = model(s, t).logits[0].float()  # (T,V)
    return torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(out)[:, None]).squeeze(1)


def _pearson(a: Tensor, b: Tensor) -> float | None:
    a, b = a.double() - a.double().mean(), b.double() - b.double().mean()
    den = float(a.norm() * b.norm())
    return None if den == 0.0 else float((a * b).sum()) / den


def occlusion(
    model: Transformer,
    src_ids: Sequence[int],
    tgt_ids: Sequence[int],
    *,
    src_pieces: Sequence[str],
    tgt_pieces: Sequence[str],
    keep: Sequence[bool],
    words: Sequence[str] | None = None,
    cross: Tensor | None = None,
) -> dict[str, Any]:
    """Occlusion of each source word (or of ``words``, matched as the words are written,
    without the ``▁``) for the pair ``src_ids`` (ending in ``<eos>``) → ``tgt_ids`` (the
    output, no ``<bos>``/``<eos>``); ``keep``: a flag per source piece never removed;
    ``cross``: the pair's cross-attention, (layers, heads, T+1, S), for the agreement (from
    the same teacher-forced pass; None: no comparison)."""
    cfg = model.config
    src, out = list(src_ids), [*tgt_ids, cfg.eos_id]
    fed = [cfg.start_id, *tgt_ids]
    groups = source_words(src_pieces, keep)
    written = ["".join(src_pieces[i] for i in g).replace(WORD_START, " ").strip() for g in groups]
    chosen: list[tuple[str, list[int]]]
    if words is None:
        chosen = list(zip(written, groups, strict=True))
    else:
        chosen = []
        for w in words:
            found = [g for text, g in zip(written, groups, strict=True) if text == w.strip()]
            chosen.append((w.strip(), [i for g in found for i in g]))
    with torch.inference_mode():
        full = _target_logprobs(model, src, fed, out)
        rows = []
        for _, idx in chosen:
            removed = set(idx)
            variant = [x for i, x in enumerate(src) if i not in removed]
            rows.append(full - _target_logprobs(model, variant, fed, out))
    importance = torch.stack(rows, dim=1) if rows else torch.zeros(len(out), 0)  # (T+1, W)
    result: dict[str, Any] = {
        "words": [w for w, _ in chosen],
        "word_pieces": [[display_tokens([src_pieces[i]])[0] for i in idx] for _, idx in chosen],
        "targets": display_tokens([*tgt_pieces]),
        "logprob": [round(float(x), 6) for x in full],
        "importance": [[round(float(x), 6) for x in row] for row in importance],
    }
    if cross is not None and chosen:
        result["heads"] = _agreement(cross, importance, [idx for _, idx in chosen])
    return result


def _agreement(cross: Tensor, importance: Tensor, groups: list[list[int]]) -> list[dict[str, Any]]:
    """Per decoder layer and head: its attention summed over each word's pieces (T+1, W) and
    how it agrees with ``importance`` (T+1, W)."""
    layers, heads = cross.shape[0], cross.shape[1]
    best_word = importance.argmax(dim=1)  # (T+1,)
    found = []
    for layer in range(layers):
        for head in range(heads):
            a = torch.stack([cross[layer, head][:, g].sum(dim=1) for g in groups], dim=1)
            top1 = float((a.argmax(dim=1) == best_word).double().mean())
            rs = [r for t in range(a.shape[0]) if (r := _pearson(a[t], importance[t])) is not None]
            found.append(
                {
                    "layer": layer,
                    "head": head,
                    "attention": [[round(float(x), 5) for x in row] for row in a],
                    "top1": top1,
                    "correlation": sum(rs) / len(rs) if rs else None,
                }
            )
    return found
