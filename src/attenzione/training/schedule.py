"""The learning-rate schedule of the paper: linear warm-up, then inverse square root decay.

    lr(step) = peak · min(step / warmup, sqrt(warmup / step))

It rises linearly to ``peak`` at ``warmup`` steps and then decays as 1/√step. Adam's second
moment estimates are poor in the first steps; the warm-up keeps those steps small, which a
post-norm Transformer needs to train at all. The rate is a pure function of the step, so a
resumed run picks it up exactly where it stopped (no scheduler state to lose).

An optional cool-down multiplies it by a linear ramp to zero over the last ``fraction`` of the
run's budget (steps or minutes, see ``cooldown_factor``): 1/√step never gets small, so the
weights keep jittering at the end of a run; bringing the rate down to zero lets them settle
(the "warm-up, stable, decay" schedules; Hägele et al. 2024 measure a 20% cool-down as good as
a cosine schedule of the same length).
"""

from __future__ import annotations

import math


def inverse_sqrt_lr(step: int, *, peak: float, warmup: int) -> float:
    """Learning rate for optimizer step ``step`` (1-based)."""
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))


def cooldown_factor(used: float, fraction: float) -> float:
    """The cool-down's multiplier when ``used`` of the budget (0…1) is spent: 1 until the last
    ``fraction`` of it, then falling linearly to 0 at its end (``fraction`` 0: always 1)."""
    if fraction <= 0:
        return 1.0
    return min(1.0, max(0.0, (1.0 - used) / fraction))
