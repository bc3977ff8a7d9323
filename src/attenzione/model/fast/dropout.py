"""A faster dropout for training: keep each value with probability 1 − p and scale the kept
ones by 1/(1 − p), as ``nn.Dropout`` does, with the mask drawn as ``rand() >= p``. The
reference model uses ``nn.Dropout``; :func:`attenzione.model.fast.attention.for_training`
puts :class:`FastDropout` in its place (the trainer calls it).

Why not ``torch.nn.functional.dropout``: torch's CPU kernel draws its mask through
``bernoulli_``, about three times slower than ``rand() >= p`` at our shapes. With 22 dropouts
in a 4 + 4-layer model's step that was a fifth of a compact model's training time on 2 cores
(docs/multi30k.md, "Speed"). The result is the same distribution; only the random numbers
differ.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def dropout(x: Tensor, p: float) -> Tensor:
    """Zero each element of ``x`` with probability ``p``, scale the rest by 1/(1 − p).

    The mask is drawn in x's shape on x's device and cast to x's dtype (bf16 under autocast),
    so the product stays in x's precision; autograd keeps the mask for the backward pass.
    """
    if p <= 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    keep = (torch.rand(x.shape, device=x.device) >= p).to(x.dtype)
    return x * keep.mul_(1.0 / (1.0 - p))


class FastDropout(nn.Dropout):
    """``nn.Dropout`` drawing its mask with :func:`dropout`; nothing at all outside training."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p) if self.training else x
