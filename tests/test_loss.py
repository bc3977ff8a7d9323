"""The block-wise label-smoothed cross-entropy against the plain log-softmax version."""

from __future__ import annotations

import pytest
import torch

from attenzione.training import loss as loss_mod
from attenzione.training.loss import SmoothedCrossEntropy, label_smoothed_loss, reference_loss


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 3 rows at V=11, so every test crosses block edges and ends on a part-block."""
    monkeypatch.setattr(loss_mod, "_BLOCK_ELEMENTS", 33)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradient_match_log_softmax(
    small_blocks: None, smoothing: float, dtype: torch.dtype
) -> None:
    torch.manual_seed(0)
    z = (torch.randn(10, 11, dtype=dtype) * 4).requires_grad_()
    y = torch.randint(0, 11, (10,))
    got, got_nll = SmoothedCrossEntropy.apply(z, y, smoothing)
    (grad,) = torch.autograd.grad(got, z)
    want, want_nll = reference_loss(z, y, smoothing=smoothing)
    (want_grad,) = torch.autograd.grad(want, z)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    assert got.item() == pytest.approx(want.item(), rel=tol)
    assert got_nll.item() == pytest.approx(want_nll.item(), rel=tol)
    torch.testing.assert_close(grad, want_grad, rtol=tol, atol=tol)


def test_gradcheck(small_blocks: None) -> None:
    torch.manual_seed(1)
    z = torch.randn(7, 11, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 11, (7,))
    assert torch.autograd.gradcheck(lambda t: SmoothedCrossEntropy.apply(t, y, 0.1)[0], (z,))


def test_logits_are_left_as_they_were(small_blocks: None) -> None:
    """The backward pass works on copies: float32 logits (no conversion) must not change."""
    z = torch.randn(8, 11, requires_grad=True)
    before = z.detach().clone()
    SmoothedCrossEntropy.apply(z, torch.randint(0, 11, (8,)), 0.1)[0].backward()
    assert torch.equal(z.detach(), before)


def test_bf16_logits_give_a_bf16_gradient_close_to_float(small_blocks: None) -> None:
    torch.manual_seed(2)
    z32 = torch.randn(9, 11) * 3
    z = z32.bfloat16().requires_grad_()
    y = torch.randint(0, 11, (9,))
    got, _ = SmoothedCrossEntropy.apply(z, y, 0.1)
    got.backward()
    assert z.grad is not None and z.grad.dtype == torch.bfloat16
    zf = z.detach().float().requires_grad_()
    want, _ = reference_loss(zf, y, smoothing=0.1)
    want.backward()
    assert got.dtype == torch.float32 and got.item() == pytest.approx(want.item(), rel=1e-5)
    torch.testing.assert_close(z.grad.float(), zf.grad, rtol=0.02, atol=2e-3)


def test_padding_is_left_out(small_blocks: None) -> None:
    """(B,T,V) logits with padded targets: the same sums as the real rows alone."""
    torch.manual_seed(3)
    logits = torch.randn(2, 4, 11)
    target = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0]])  # pad id 0
    smoothed, nll, n = label_smoothed_loss(logits, target, pad_id=0, smoothing=0.1)
    real = target != 0
    want, want_nll = reference_loss(logits[real], target[real], smoothing=0.1)
    assert n == 4
    assert smoothed.item() == pytest.approx(want.item(), rel=1e-6)
    assert nll.item() == pytest.approx(want_nll.item(), rel=1e-6)
    assert not nll.requires_grad


def test_no_tokens_no_grad_and_strided_logits(small_blocks: None) -> None:
    # a batch without target tokens: zero loss, an empty gradient
    z = torch.zeros(0, 11, requires_grad=True)
    loss, nll = SmoothedCrossEntropy.apply(z, torch.zeros(0, dtype=torch.long), 0.1)
    loss.backward()
    assert (
        loss.item() == 0.0 and nll.item() == 0.0 and z.grad is not None and z.grad.shape == (0, 11)
    )
    # dev evaluation runs under no_grad; a column slice is not contiguous
    torch.manual_seed(4)
    wide = torch.randn(8, 22)
    y = torch.randint(0, 11, (8,))
    with torch.no_grad():
        got, got_nll = SmoothedCrossEntropy.apply(wide[:, ::2], y, 0.1)
    want, want_nll = reference_loss(wide[:, ::2].contiguous(), y, smoothing=0.1)
    assert not got.requires_grad
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    assert got_nll.item() == pytest.approx(want_nll.item(), rel=1e-6)


def test_no_smoothing_is_the_plain_nll_even_with_a_banned_token(small_blocks: None) -> None:
    z = torch.randn(4, 11)
    z[:, 3] = float("-inf")  # a token no position may take
    y = torch.tensor([0, 1, 2, 4])
    loss, nll = SmoothedCrossEntropy.apply(z.requires_grad_(), y, 0.0)
    assert torch.isfinite(loss) and loss.item() == pytest.approx(nll.item())
    loss.backward()
    assert z.grad is not None and torch.isfinite(z.grad).all()
