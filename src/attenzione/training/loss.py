"""Label-smoothed cross-entropy, ignoring padding.

Label smoothing (ε = 0.1 in the paper) trains towards a target distribution that puts 1 − ε on
the reference token and spreads ε uniformly over the vocabulary:

    loss = (1 − ε) · (−log p(y)) + ε · mean_v(−log p(v))

It costs a little perplexity and helps BLEU: the model learns to be less sure, which makes
beam search better behaved. Padded positions are removed *before* the softmax, so they cost
nothing.

With log p(v) = z_v − lse(z) (z the logits, lse the log-sum-exp over the vocabulary) the loss
of one token is

    lse(z) − (1 − ε) · z_y − ε · mean_v(z_v)

and its gradient with respect to the logits is softmax(z) − q, where q is the smoothed target
(1 − ε + ε/V on y, ε/V elsewhere). :class:`SmoothedCrossEntropy` computes exactly that, a
block of rows at a time, instead of leaving it to autograd. The straightforward version
(float copy of the logits → log-softmax → gather and mean, then the backward of each) walks
the (N, V) logits about ten times in memory: at the 24k vocabulary that is a third of a CPU
training step. Here each block of rows is small enough to stay in the processor's cache
while it is read, and nothing (N, V)-sized is kept for the backward pass beyond the logits
themselves. :func:`reference_loss` is the straightforward version, kept for the tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

# Rows per block: about a million logits, 4 MB in float32, so a block's passes hit the cache.
_BLOCK_ELEMENTS = 1 << 20


def _work_dtype(logits: Tensor) -> torch.dtype:
    """float32 for bf16/fp16/fp32 logits, float64 for float64 ones (the gradient check)."""
    return torch.promote_types(logits.dtype, torch.float32)


def _blocks(n: int, v: int) -> Iterator[slice]:
    """The row slices of (n, v) logits, each about ``_BLOCK_ELEMENTS`` numbers."""
    step = max(1, _BLOCK_ELEMENTS // max(v, 1))
    for start in range(0, n, step):
        yield slice(start, start + step)


class SmoothedCrossEntropy(torch.autograd.Function):
    """(N,V) logits, (N,) targets → (smoothed loss sum, NLL sum); the gradient flows from the
    first only (the second is for perplexity)."""

    @staticmethod
    def forward(
        ctx: Any, logits: Tensor, target: Tensor, smoothing: float
    ) -> tuple[Tensor, Tensor]:
        n, v = logits.shape
        work = _work_dtype(logits)
        nll = torch.empty(n, dtype=work, device=logits.device)  # −log p(y)
        spread = torch.empty(n, dtype=work, device=logits.device)  # mean_v(−log p(v))
        lse = torch.empty(n, dtype=work, device=logits.device)
        for rows in _blocks(n, v):
            lprobs = torch.log_softmax(logits[rows], dim=-1, dtype=work)  # (b,V), one pass
            y = target[rows, None]
            nll[rows] = -lprobs.gather(1, y).squeeze(1)
            spread[rows] = -lprobs.mean(dim=-1)
            # log p(y) = z_y − lse, so the block's lse comes back without another pass
            lse[rows] = logits[rows].gather(1, y).squeeze(1).to(work) + nll[rows]
        # ε = 0 is the plain NLL (also where a -inf logit makes the spread infinite)
        smoothed = nll if smoothing == 0 else (1.0 - smoothing) * nll + smoothing * spread
        ctx.save_for_backward(logits, target, lse)
        ctx.smoothing = smoothing
        nll_sum = nll.sum()
        ctx.mark_non_differentiable(nll_sum)
        return smoothed.sum(), nll_sum

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_smoothed: Tensor, _grad_nll: Tensor) -> tuple[Tensor, None, None]:
        logits, target, lse = ctx.saved_tensors
        eps = ctx.smoothing
        n, v = logits.shape
        grad = torch.empty_like(logits)
        work = _work_dtype(logits)
        g = grad_smoothed.to(work)
        for rows in _blocks(n, v):
            p = logits[rows].to(work, copy=True).sub_(lse[rows, None]).exp_()  # softmax, (b,V)
            p.sub_(eps / v)
            p.scatter_add_(
                1, target[rows, None], torch.full_like(p[:, :1], -(1.0 - eps))
            )  # − q on the reference token
            grad[rows] = p.mul_(g)
        return grad, None, None


def reference_loss(logits: Tensor, target: Tensor, *, smoothing: float) -> tuple[Tensor, Tensor]:
    """The same two sums through log-softmax and autograd: what the tests compare against."""
    lprobs = torch.log_softmax(logits.to(_work_dtype(logits)), dim=-1)
    nll = -lprobs.gather(1, target[:, None]).squeeze(1)
    nll_sum = nll.sum()
    if smoothing == 0:
        return nll_sum, nll_sum.detach()
    smoothed = (1.0 - smoothing) * nll_sum - smoothing * lprobs.mean(dim=-1).sum()
    return smoothed, nll_sum.detach()


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
    smoothed, nll_sum = SmoothedCrossEntropy.apply(picked, target[real], float(smoothing))
    return smoothed, nll_sum.detach(), int(real.sum())
