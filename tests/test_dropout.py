"""The model's dropout: the inverted dropout of the paper, drawn with rand() >= p."""

from __future__ import annotations

import pytest
import torch

from attenzione.model.fast.dropout import dropout
from tiny_model import toy_transformer


def test_zero_probability_is_the_identity() -> None:
    x = torch.randn(4, 5)
    assert dropout(x, 0.0) is x


def test_kept_values_are_scaled_and_the_rest_are_zero() -> None:
    torch.manual_seed(0)
    x = torch.rand(200, 500) + 1.0  # no element is 0 before dropout
    y = dropout(x, 0.3)
    dropped = y == 0
    # 100,000 draws: the dropped share is within 1% of p
    assert abs(dropped.float().mean().item() - 0.3) < 0.01
    torch.testing.assert_close(y[~dropped], x[~dropped] / 0.7)


def test_expectation_is_unchanged() -> None:
    torch.manual_seed(1)
    x = torch.full((400, 1000), 2.0)
    assert abs(dropout(x, 0.5).mean().item() - 2.0) < 0.02


def test_gradient_flows_through_the_kept_values_only() -> None:
    torch.manual_seed(2)
    x = torch.rand(50, 40, requires_grad=True)
    y = dropout(x, 0.25)
    y.sum().backward()
    assert x.grad is not None
    kept = y.detach() != 0
    torch.testing.assert_close(x.grad[kept], torch.full_like(x.grad[kept], 1 / 0.75))
    assert torch.all(x.grad[~kept] == 0)


def test_the_dtype_is_kept_under_bf16() -> None:
    x = torch.randn(8, 16, dtype=torch.bfloat16)
    assert dropout(x, 0.1).dtype == torch.bfloat16


def test_p_of_one_drops_everything() -> None:
    assert torch.all(dropout(torch.randn(3, 3), 1.0) == 0)


@pytest.mark.parametrize("training", [True, False])
def test_the_model_drops_only_in_training(training: bool) -> None:
    model = toy_transformer(dropout=0.3).train(training)
    src = torch.randint(4, 31, (2, 6))
    tgt = torch.randint(4, 37, (2, 5))
    torch.manual_seed(3)
    a = model(src, tgt).logits
    torch.manual_seed(4)
    b = model(src, tgt).logits
    assert torch.equal(a, b) is (not training)
