"""How much search one machine can hold: the bound on beam size and batch rows.

Beam search keeps ``beam`` rows a sentence, and each row holds its own decoder cache (keys
and values of every layer, up to the model's ``max_len`` positions) and a row of scores over
the target vocabulary. A request for more rows than the memory can hold does not fail
quickly: it grows until the machine swaps or the kernel kills it (``--beam 50000`` on one
word reached 13 GB in minutes). So the rows are bounded before the search starts:

- a beam that alone would not fit is refused, with a one-line reason naming the largest
  beam this machine allows (:func:`check_beam`);
- a batch is cut to as many sentences as fit at that beam (:meth:`Bounds.batch_for`, which
  :class:`~attenzione.translator.Translator` calls before every search), so a wide beam makes
  smaller batches rather than an error.

The budget is half the memory available when the model is loaded (``MemAvailable`` on Linux,
the physical memory elsewhere), at float32 sizes, the largest the search uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from attenzione.config import DecodeConfig, ModelConfig

MAX_BEAM = 1024
"""The widest beam allowed whatever the memory: beyond a few dozen rows a beam finds nothing
new (the best hypotheses are the same) and only costs time."""


def available_memory() -> int:
    """Bytes of memory free for use now (Linux's MemAvailable, else the physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4 << 30  # unknown: assume a small machine


def row_bytes(config: ModelConfig) -> int:
    """The memory one search row may need at full length: its self-attention cache (keys
    and values, every decoder layer, ``max_len`` positions), its cross-attention keys and
    values (as long as the longest source), and a few rows of vocabulary scores."""
    width = config.n_heads * config.d_head
    cache = config.n_dec_layers * 2 * config.max_len * width  # self-attention K and V
    cross = config.n_dec_layers * 2 * config.max_len * width  # encoder K and V per row
    scores = 4 * config.tgt_vocab_size  # logits, log-probabilities, totals, top-k
    return 4 * (cache + cross + scores)


@dataclass(frozen=True)
class Bounds:
    """The most search rows (sentences × beam) one batch may hold."""

    max_rows: int

    @property
    def max_beam(self) -> int:
        return max(1, min(MAX_BEAM, self.max_rows))

    def batch_for(self, search: DecodeConfig, batch_size: int) -> int:
        """``batch_size`` cut to the sentences that fit at ``search``'s rows each (at least
        1); a beam or n-best list wider than the machine holds is refused in one line."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        rows = search.beam_size if search.method == "beam" else 1
        check_beam(self, rows, search.n_best if search.method == "beam" else 1)
        return max(1, min(batch_size, self.max_rows // rows))


def bounds_for(config: ModelConfig, memory: int | None = None) -> Bounds:
    """The bounds for ``config`` on this machine (or with ``memory`` bytes to spend)."""
    budget = (available_memory() if memory is None else memory) // 2
    return Bounds(max_rows=max(1, budget // row_bytes(config)))


def check_beam(bounds: Bounds, beam: int, n_best: int = 1) -> None:
    """Refuse, in one line (ValueError), a beam or n-best list wider than ``bounds`` allow."""
    widest = max(beam, n_best)
    if widest > bounds.max_beam:
        what = "beam" if beam >= n_best else "n-best list"
        raise ValueError(
            f"a {what} of {widest} is more than this machine can search: "
            f"at most {bounds.max_beam} for this model"
        )
