"""Sinusoidal positions (a worked example: d_model 4, pos 1) and learned positions."""

from __future__ import annotations

import math

import pytest
import torch

from attenzione.model.positional import (
    LearnedPositions,
    SinusoidalPositions,
    make_positions,
    sinusoidal_table,
)


def test_worked_example() -> None:
    """d_model 4, pos 1 → [sin 1, cos 1, sin 0.01, cos 0.01] = [0.8415, 0.5403, 0.0100, 0.9999]."""
    pe = sinusoidal_table(2, 4)
    torch.testing.assert_close(
        pe[1], torch.tensor([0.8415, 0.5403, 0.0100, 0.9999]), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))


def test_formula_for_any_position_and_odd_width() -> None:
    pe = sinusoidal_table(50, 7)
    assert pe.shape == (50, 7)
    for pos in (0, 3, 49):
        for i in range(7):
            angle = pos / 10000 ** ((i - i % 2) / 7)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert float(pe[pos, i]) == pytest.approx(expected, abs=1e-6)


def test_offsets_and_growth_beyond_the_table() -> None:
    pos = SinusoidalPositions(8, max_len=10)
    torch.testing.assert_close(pos(3, offset=4), sinusoidal_table(10, 8)[4:7])
    torch.testing.assert_close(pos(5, offset=12), sinusoidal_table(20, 8)[12:17])


def test_learned_positions_have_a_clear_limit() -> None:
    pos = make_positions("learned", 8, 6)
    assert isinstance(pos, LearnedPositions)
    assert pos(3, offset=2).shape == (3, 8)
    with pytest.raises(ValueError, match="max_len=6"):
        pos(3, offset=5)
    with pytest.raises(ValueError, match="positions"):
        make_positions("rotary", 8, 6)
