"""The k largest values of each row of a matrix, exactly, in two passes.

Beam search ranks the continuations of its hypotheses by taking, from every row of scores
over the whole target vocabulary (24,001 pieces for the shipped model), only a handful of
the best. :func:`top_k` gives what ``torch.topk`` gives, faster on such long rows.
"""

from __future__ import annotations

import torch
from torch import Tensor

# Columns per block in :func:`top_k`'s first pass.
TOP_K_BLOCK = 64


def top_k(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The ``k`` largest values of each row of a 2-D ``x`` and their columns, largest first:
    ``x.topk(k, dim=1)``, in two passes.

    ``torch.topk`` over a long row costs several times a plain pass over it (measured on the
    shipped model's 24,001 pieces, 2 threads: 7.7 ms for 256 rows, against 0.5 ms for their
    maxima). A search takes a handful of the best of 24,001 or 4 × 24,001, so this takes the
    maximum of every block of :data:`TOP_K_BLOCK` columns, keeps the ``k`` blocks with the
    largest maxima and ranks only their columns. That is exact: each of the ``k`` largest
    values lies in one of those blocks (a block outside them has ``k`` blocks ahead of it,
    each holding a value at least as large as its maximum). Among equal values the columns
    returned may be others than ``torch.topk``'s; a row too short for blocks to pay takes
    ``torch.topk`` itself."""
    n, v = x.shape
    blocks = v // TOP_K_BLOCK
    if blocks <= 4 * k:
        values, indices = x.topk(k, dim=1)
        return values, indices
    whole = blocks * TOP_K_BLOCK
    maxima = x[:, :whole].view(n, blocks, TOP_K_BLOCK).amax(dim=2)  # (n, blocks)
    best = maxima.topk(k, dim=1).indices  # (n, k) the blocks that hold the k largest
    offsets = torch.arange(TOP_K_BLOCK, device=x.device)
    cols = (best[:, :, None] * TOP_K_BLOCK + offsets).view(n, k * TOP_K_BLOCK)
    if whole < v:  # the last columns, fewer than a block: always candidates
        rest = torch.arange(whole, v, device=x.device).expand(n, v - whole)
        cols = torch.cat([cols, rest], dim=1)
    values, at = x.gather(1, cols).topk(k, dim=1)
    return values, cols.gather(1, at)
