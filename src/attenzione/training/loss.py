"""Label-smoothed cross-entropy, ignoring padding.

Label smoothing (ε = 0.1 in the paper) trains towards a target distribution that puts 1 − ε on
the reference token and spreads ε uniformly over the vocabulary:

    loss = (1 − ε) · (−log p(y)) + ε · mean_v(−log p(v))

It costs a little perplexity and helps BLEU: the model learns to be less sure, which makes
beam search better behaved. Padded positions are removed *before* the softmax, so they cost
nothing, and a single log-softmax serves both the smoothed loss and the plain NLL.
"""

from __future__ import annotations

import torch
from torch import Tensor


def label_smoothed_loss(
    logits: Tensor, target: Tensor, *, pad_id: int, smoothing: float = 0.1
) -> tuple[Tensor, Tensor, int]:
    """Summed losses over real target tokens.

    Args:
        logits: (B,T,V), or (N,V) already restricted to the real target positions (what
            ``Transformer.forward(..., logits_at=target != pad_id)`` returns).
        target: (B,T) ids, ``pad_id`` where there is no token.

    Returns:
        (smoothed loss sum — what we optimise, plain NLL sum — for perplexity, token count).
    """
    real = target != pad_id  # (B,T)
    picked = logits if logits.dim() == 2 else logits[real]  # (N,V), N real tokens
    lprobs = torch.log_softmax(picked.float(), dim=-1)
    nll = -lprobs.gather(1, target[real][:, None]).squeeze(1)  # (N,)
    nll_sum = nll.sum()
    if smoothing > 0:
        smoothed = (1.0 - smoothing) * nll_sum - smoothing * lprobs.mean(dim=-1).sum()
    else:
        smoothed = nll_sum
    return smoothed, nll_sum.detach(), int(real.sum())
