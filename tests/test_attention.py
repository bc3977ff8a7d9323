"""Scaled dot-product attention (the reference formula and model/fast/'s three kernels) and
multi-head attention, against oracles."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attenzione.model import masks as M
from attenzione.model.attention import MultiHeadAttention, attention
from attenzione.model.fast.attention import (
    FusedAttention,
    InferenceAttention,
    choose_kernel,
    for_training,
    scaled_dot_product_attention,
)

KERNELS = ["math", "fused", "chunked", "auto"]


def _qkv(
    b: int = 2, h: int = 3, tq: int = 5, tk: int = 7, dk: int = 8, dv: int = 6, grad: bool = False
):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(b, h, tq, dk, generator=g, requires_grad=grad)
    k = torch.randn(b, h, tk, dk, generator=g, requires_grad=grad)
    v = torch.randn(b, h, tk, dv, generator=g, requires_grad=grad)
    return q, k, v


def _key_mask(b: int, tk: int, lengths: list[int]) -> torch.Tensor:
    ids = torch.ones(b, tk, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids[row, n:] = 0
    return M.padding_mask(ids, 0)


def test_hand_computed_two_by_two() -> None:
    """softmax(q·k/√d) v for 2 queries and 2 keys, computed with the math module by hand."""
    q = torch.tensor([[[[1.0, 0.0], [0.0, 2.0]]]])
    k = torch.tensor([[[[1.0, 1.0], [2.0, 0.0]]]])
    v = torch.tensor([[[[10.0, 0.0], [0.0, 20.0]]]])
    expected = []
    for qi in ([1.0, 0.0], [0.0, 2.0]):
        scores = [
            sum(a * b for a, b in zip(qi, kj, strict=True)) / math.sqrt(2)
            for kj in ([1.0, 1.0], [2.0, 0.0])
        ]
        e = [math.exp(s) for s in scores]
        alpha = [x / sum(e) for x in e]
        expected.append([alpha[0] * 10.0, alpha[1] * 20.0])
    for kernel in KERNELS:
        out, _ = scaled_dot_product_attention(q, k, v, kernel=kernel)
        torch.testing.assert_close(out[0, 0], torch.tensor(expected), atol=1e-6, rtol=0)
    ref_out, w = attention(q, k, v)  # the reference: the formula, returning α
    torch.testing.assert_close(ref_out[0, 0], torch.tensor(expected), atol=1e-6, rtol=0)
    e0 = [math.exp(1 / math.sqrt(2)), math.exp(2 / math.sqrt(2))]
    assert float(w[0, 0, 0, 0]) == pytest.approx(e0[0] / sum(e0), abs=1e-6)


@pytest.mark.parametrize("backend", KERNELS)
@pytest.mark.parametrize("kind", ["none", "key_padding", "pairwise", "causal_mask"])
def test_kernels_match_torch_sdpa_outputs_and_gradients(backend: str, kind: str) -> None:
    square = kind in ("pairwise", "causal_mask")
    tq, tk = (6, 6) if square else (5, 7)
    dv = 8 if backend == "fused" and square else 6  # Dv ≠ Dk where the oracle allows it
    q, k, v = _qkv(tq=tq, tk=tk, dv=dv, grad=True)
    mask = None
    if kind == "key_padding":
        mask = _key_mask(2, tk, [7, 4])
    elif kind == "pairwise":
        ids = torch.tensor([[5, 5, 5, 5, 5, 5], [5, 5, 5, 5, 0, 0]])
        mask = M.pairwise_padding_mask(ids, 0)
    elif kind == "causal_mask":
        mask = M.causal_mask(tq)
    out, _ = scaled_dot_product_attention(q, k, v, mask, kernel=backend, chunk_size=4)
    q2, k2, v2 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)
    if kind == "pairwise":  # torch gives NaN on fully masked rows; we give zeros there
        rows = mask.any(-1, keepdim=True)  # type: ignore[union-attr]
        ref = torch.where(rows, ref, torch.zeros_like(ref))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    grad = torch.randn_like(out)
    (out * grad).sum().backward()
    (ref * grad).sum().backward()
    for mine, theirs in ((q, q2), (k, k2), (v, v2)):
        assert mine.grad is not None and theirs.grad is not None
        torch.testing.assert_close(mine.grad, torch.nan_to_num(theirs.grad), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", KERNELS)
def test_fully_masked_rows_give_zeros_and_finite_gradients(backend: str) -> None:
    ids = torch.tensor([[4, 5, 6, 0, 0], [4, 0, 0, 0, 0]])
    mask = M.pairwise_padding_mask(ids, 0)  # padded queries: rows with no allowed key
    q, k, v = _qkv(tq=5, tk=5, grad=True)
    need = backend in ("math", "auto")
    out, w = scaled_dot_product_attention(
        q, k, v, mask, kernel=backend, need_weights=need, chunk_size=2
    )
    assert torch.isfinite(out).all()
    real = ids != 0
    assert (out[~real[:, None, :, None].expand_as(out)] == 0).all()
    if w is not None:
        assert (w[0, :, 3:] == 0).all() and (w[1, :, 1:] == 0).all()
    out.sum().backward()
    for t in (q, k, v):
        assert t.grad is not None and torch.isfinite(t.grad).all()


def test_weights_rows_sum_to_one_over_allowed_keys_and_causal_is_lower_triangular() -> None:
    q, k, v = _qkv(tq=6, tk=6)
    mask = M.causal_mask(6) & _key_mask(2, 6, [6, 4])
    _, w = attention(q, k, v, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 6), atol=1e-6, rtol=0)
    assert (w.triu(diagonal=1) == 0).all()
    assert (w[1, :, :, 4:] == 0).all()


@pytest.mark.parametrize("chunk", [1, 3, 5, 8, 64])
def test_chunked_equals_math_when_chunks_divide_nothing(chunk: int) -> None:
    q, k, v = _qkv(b=2, h=2, tq=11, tk=37, grad=True)
    mask = _key_mask(2, 37, [37, 23])
    a, _ = scaled_dot_product_attention(q, k, v, mask, kernel="chunked", chunk_size=chunk)
    b, _ = attention(q, k, v, mask)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    ga = torch.autograd.grad(a.sum(), (q, k, v))
    gb = torch.autograd.grad(b.sum(), (q, k, v))
    for x, y in zip(ga, gb, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


def test_the_causal_mask_after_cached_keys_is_bottom_right_aligned_in_every_kernel() -> None:
    q, k, v = _qkv(tq=3, tk=9)  # 3 new queries after 6 cached keys
    causal = M.causal_mask(3, offset=6)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal[0, 0])
    torch.testing.assert_close(attention(q, k, v, causal)[0], ref, atol=1e-5, rtol=1e-5)
    for backend in ("math", "fused", "chunked"):
        out, _ = scaled_dot_product_attention(q, k, v, causal, kernel=backend, chunk_size=4)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_the_kernel_choice_says_why_the_fused_one_is_not_taken() -> None:
    q, _, _ = _qkv()
    assert choose_kernel(q, need_weights=False) == ("fused", "")
    name, why = choose_kernel(q, need_weights=True)
    assert name == "math" and "weights" in why
    name, why = choose_kernel(q.bfloat16(), need_weights=False)
    assert name == "math" and "bfloat16" in why and "\n" not in why


def test_bad_arguments_are_clear_errors() -> None:
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="kernel"):
        scaled_dot_product_attention(q, k, v, kernel="flash")
    with pytest.raises(ValueError, match="need_weights"):
        scaled_dot_product_attention(q, k, v, need_weights=True, kernel="fused")
    with pytest.raises(ValueError, match="torch.bool"):
        attention(q, k, v, torch.ones(1, 1, 5, 7))
    with pytest.raises(ValueError, match="torch.bool"):
        scaled_dot_product_attention(q, k, v, torch.ones(1, 1, 5, 7))
    with pytest.raises(ValueError, match="d_k"):
        scaled_dot_product_attention(q, k[..., :3], v)


def _copy_to_torch_mha(mine: MultiHeadAttention, d: int, h: int) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([mine.q_proj.weight, mine.k_proj.weight, mine.v_proj.weight])
        )
        ref.in_proj_bias.copy_(torch.cat([mine.q_proj.bias, mine.k_proj.bias, mine.v_proj.bias]))
        ref.out_proj.weight.copy_(mine.out_proj.weight)
        ref.out_proj.bias.copy_(mine.out_proj.bias)
    return ref.eval()


@pytest.mark.parametrize("cross", [False, True])
def test_multihead_matches_torch_multiheadattention(cross: bool) -> None:
    torch.manual_seed(0)
    d, h = 24, 4
    mine = MultiHeadAttention(d, h, d // h).eval()
    ref = _copy_to_torch_mha(mine, d, h)
    x = torch.randn(3, 6, d)
    memory = torch.randn(3, 9, d) if cross else x
    src_ids = torch.ones(3, memory.shape[1], dtype=torch.long)
    src_ids[1, 5:] = 0
    src_ids[2, 2:] = 0
    mask = M.padding_mask(src_ids, 0)  # True = may attend
    out, w = mine(x, memory if cross else None, mask, need_weights=True)
    ref_out, ref_w = ref(
        x,
        memory,
        memory,
        key_padding_mask=M.key_padding_to_is_pad(mask),
        need_weights=True,
        average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)
    plain, none = mine(x, memory if cross else None, mask)
    assert none is None
    torch.testing.assert_close(plain, out, atol=0, rtol=0)  # the same formula, weights or not
    fused, _ = FusedAttention.of(mine)(x, memory if cross else None, mask)
    torch.testing.assert_close(fused, out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("d", "h", "dh"), [(50, 4, 16), (100, 3, 32), (200, 7, 24), (300, 7, 64)])
def test_multihead_decouples_d_model_from_heads(d: int, h: int, dh: int) -> None:
    mha = MultiHeadAttention(d, h, dh)
    assert mha.q_proj.weight.shape == mha.k_proj.weight.shape == (h * dh, d)
    assert mha.out_proj.weight.shape == (d, h * dh)
    x = torch.randn(2, 5, d)
    out, w = mha(x, need_weights=True)
    assert out.shape == (2, 5, d)
    assert w is not None and w.shape == (2, h, 5, 5)


def test_the_reference_module_holds_the_four_projections_and_nothing_for_speed() -> None:
    mha = MultiHeadAttention(8, 2, 4)
    assert [name for name, _ in mha.named_children()] == [
        "q_proj", "k_proj", "v_proj", "out_proj", "dropout",
    ]  # fmt: skip
    assert isinstance(mha.dropout, torch.nn.Dropout)


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_inference_attention_stacks_the_projections_and_saves_the_reference_names(
    kind: str,
) -> None:
    torch.manual_seed(0)
    ref = MultiHeadAttention(8, 2, 4).eval()
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    mask = M.padding_mask(torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]), 0)
    fast = (InferenceAttention.of_self if kind == "self" else InferenceAttention.of_cross)(ref)
    stacked = "qkv_proj" if kind == "self" else "kv_proj"
    assert stacked in dict(fast.named_children())
    assert "k_proj" not in dict(fast.named_children())  # each weight kept once
    inputs = (x, None, None) if kind == "self" else (x, memory, mask)
    want, _ = ref(*inputs)
    got, _ = fast(*inputs)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    saved, own = fast.state_dict(), ref.state_dict()
    assert sorted(saved) == sorted(own)
    for name, tensor in own.items():
        torch.testing.assert_close(saved[name], tensor, atol=0, rtol=0)


def test_for_training_replaces_modules_and_keeps_every_parameter() -> None:
    from attenzione.model.fast.dropout import FastDropout
    from tiny_model import toy_transformer

    model = toy_transformer(dropout=0.1)
    before = {name: p for name, p in model.named_parameters()}
    for_training(model)
    assert type(model).__name__ == "Transformer"  # no class reassigned
    assert all(isinstance(layer.self_attn, FusedAttention) for layer in model.encoder_layers)
    assert not any(type(m) is torch.nn.Dropout for m in model.modules())
    assert any(isinstance(m, FastDropout) for m in model.modules())
    after = dict(model.named_parameters())
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)


def test_a_checkpoint_with_stacked_qkv_loads_under_the_new_names() -> None:
    from attenzione.weights import current_names

    q, k, v = torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
    old = {
        "decoder_layers.1.cross_attn.qkv_proj.weight": torch.cat([q, k, v]),
        "decoder_layers.1.cross_attn.qkv_proj.bias": torch.arange(12.0),
        "decoder_layers.1.ffn.linear1.weight": q,
    }
    new = current_names(old)
    assert sorted(new) == sorted(
        ["decoder_layers.1.ffn.linear1.weight"]
        + [
            f"decoder_layers.1.cross_attn.{p}_proj.{kind}"
            for p in "qkv"
            for kind in ("weight", "bias")
        ]
    )
    torch.testing.assert_close(new["decoder_layers.1.cross_attn.k_proj.weight"], k)
    torch.testing.assert_close(
        new["decoder_layers.1.cross_attn.v_proj.bias"], torch.arange(8.0, 12.0)
    )
