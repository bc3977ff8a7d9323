"""The learning-rate schedule of the paper: linear warm-up, then inverse square root decay.

    lr(step) = peak · min(step / warmup, sqrt(warmup / step))

It rises linearly to ``peak`` at ``warmup`` steps and then decays as 1/√step. Adam's second
moment estimates are poor in the first steps; the warm-up keeps those steps small, which a
post-norm Transformer needs to train at all. The rate is a pure function of the step, so a
resumed run picks it up exactly where it stopped (no scheduler state to lose).
"""

from __future__ import annotations

import math


def inverse_sqrt_lr(step: int, *, peak: float, warmup: int) -> float:
    """Learning rate for optimizer step ``step`` (1-based)."""
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))
