"""The ``"attention": true`` extension: one sentence's cross-attention and a word alignment.

The matrix is the model's own cross-attention (target tokens × source tokens, each row sums
to 1 over the source), of one layer — the last by default, where attention is usually most
word-like — and one head or the average of its heads. Nothing is recomputed: it is
:meth:`AttentionMaps.select` of the maps the worker collected.

The alignment is read off that matrix at the level of words, which is what a reader can
check: subword pieces are grouped into words (a SentencePiece piece starting with ``▁``
starts a word, and punctuation is a word of its own), the weight from a target word to a
source word is the mean over the target word's pieces of the summed weight on the source
word's pieces, and each target word is aligned to the source word it attends to most.
``<eos>`` is left out on both sides. Pairs are (source word, target word) indices, also given
as a Pharaoh string ("0-0 1-2"), the format of fast_align and OpenNMT. Attention is not
alignment — a head may look at the next word or at punctuation — and the page lets you see
where it is and is not.
"""

from __future__ import annotations

from typing import Any

import torch

from attenzione.data.tokenizers import WORD_START
from attenzione.viz.maps import AttentionMaps, display_tokens


def _words(tokens: list[str]) -> list[list[int]]:
    """Token indices grouped into words; special tokens (``<eos>``…) excluded."""
    subword = any(t.startswith(WORD_START) for t in tokens)
    words: list[list[int]] = []
    prev_punct = False
    for i, tok in enumerate(tokens):
        if tok.startswith("<") and tok.endswith(">"):
            continue
        # "." or "," is a word of its own; a bare "▁" (SentencePiece writes one before a piece
        # its vocabulary has only inside words: a digit, a rare letter) starts the word
        punct = tok != WORD_START and not any(ch.isalnum() for ch in tok)
        after_bare = bool(words) and [tokens[j] for j in words[-1]] == [WORD_START]
        if after_bare:
            words[-1].append(i)
        elif not words or not subword or tok.startswith(WORD_START) or punct or prev_punct:
            words.append([i])
        else:
            words[-1].append(i)
        prev_punct = punct
    return words


def _text(tokens: list[str], idx: list[int]) -> str:
    return "".join(tokens[i] for i in idx).replace(WORD_START, "")


def word_alignment(weights: torch.Tensor, src: list[str], tgt: list[str]) -> dict[str, Any]:
    """Align target words to source words from a (T,S) attention matrix."""
    src_words, tgt_words = _words(src), _words(tgt)
    pairs: list[list[int]] = []
    for t, t_idx in enumerate(tgt_words):
        if not src_words:
            break
        rows = weights[t_idx]  # (pieces of this target word, S)
        scores = [float(rows[:, s_idx].sum(dim=1).mean()) for s_idx in src_words]
        best = max(range(len(scores)), key=scores.__getitem__)
        pairs.append([best, t])
    return {
        "source_words": [_text(src, w) for w in src_words],
        "target_words": [_text(tgt, w) for w in tgt_words],
        "pairs": pairs,
        "pharaoh": " ".join(f"{s}-{t}" for s, t in pairs),
    }


def attention_payload(
    maps: AttentionMaps, layer: int | None, head: int | None, full: bool
) -> dict[str, Any]:
    """The JSON for one sentence: tokens, the chosen cross map, the word alignment, and with
    ``full`` every map of every kind, layer and head (what the page's viewer draws)."""
    n_layers = maps.layers("cross")
    layer = n_layers - 1 if layer is None else layer
    if not -n_layers <= layer < n_layers:
        raise ValueError(f"attention_layer {layer} is out of range: 0..{n_layers - 1}")
    layer %= n_layers
    weights = maps.select("cross", layer, head)  # (T,S)
    out: dict[str, Any] = {
        "source_tokens": display_tokens(maps.src_tokens),
        "target_tokens": display_tokens(maps.out_tokens),
        "layer": layer,
        "head": head,
        "weights": _rounded(weights.tolist()),
        "alignment": word_alignment(weights, maps.src_tokens, maps.out_tokens),
    }
    if full:
        data = maps.to_dict()
        for kind in data["kinds"].values():
            kind["weights"] = _rounded(kind["weights"])
        out["maps"] = data
    return out


def _rounded(values: Any) -> Any:
    """Nested lists of floats rounded to 4 decimals as Python floats (float32 → JSON would
    otherwise print 0.7469000220298767 for 0.7469, tripling the size of the answer)."""
    if isinstance(values, list):
        return [_rounded(v) for v in values]
    return round(float(values), 4)
