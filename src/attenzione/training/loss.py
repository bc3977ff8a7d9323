"""Label-smoothed cross-entropy, ignoring padding.

Label smoothing (ε = 0.1 in the paper) trains towards a target distribution that puts 1 − ε on
the reference token and spreads ε over the whole vocabulary. It hurts perplexity a little and
helps BLEU: the model learns to be less sure, which makes beam search better behaved.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def label_smoothed_loss(
    logits: Tensor, target: Tensor, *, pad_id: int, smoothing: float = 0.1
) -> tuple[Tensor, Tensor, int]:
    """Summed losses over real target tokens.

    Args:
        logits: (B,T,V). target: (B,T) ids, ``pad_id`` where there is no token.

    Returns:
        (smoothed loss sum — what we optimise, plain NLL sum — for perplexity, token count).
    """
    flat = logits.reshape(-1, logits.shape[-1]).float()  # (B·T,V)
    tgt = target.reshape(-1)  # (B·T,)
    smoothed = F.cross_entropy(
        flat, tgt, ignore_index=pad_id, label_smoothing=smoothing, reduction="sum"
    )
    nll = F.cross_entropy(flat.detach(), tgt, ignore_index=pad_id, reduction="sum")
    return smoothed, nll, int((tgt != pad_id).sum())
