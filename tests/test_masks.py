"""Masks: shapes, dtype, polarity (True = may attend) and the three full masks' definitions."""

from __future__ import annotations

import torch

from attenzione.model import masks as M

IDS = torch.tensor([[5, 6, 7, 0], [5, 0, 0, 0]])


def test_padding_mask_marks_real_keys() -> None:
    m = M.padding_mask(IDS, 0)
    assert m.shape == (2, 1, 1, 4) and m.dtype == torch.bool
    assert m[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False]]


def test_pairwise_padding_mask_needs_both_tokens_real() -> None:
    m = M.pairwise_padding_mask(IDS, 0)
    assert m.shape == (2, 1, 4, 4)
    real = IDS != 0
    for b in range(2):
        for i in range(4):
            for j in range(4):
                assert bool(m[b, 0, i, j]) == bool(real[b, i] and real[b, j])


def test_causal_mask_is_lower_triangular_and_offsets_for_a_cache() -> None:
    m = M.causal_mask(4)
    assert m.shape == (1, 1, 4, 4)
    assert torch.equal(m[0, 0], torch.ones(4, 4, dtype=torch.bool).tril())
    o = M.causal_mask(2, offset=3)  # two new queries at positions 3 and 4 after 3 cached keys
    assert o.shape == (1, 1, 2, 5)
    assert o[0, 0].tolist() == [[True, True, True, True, False], [True] * 5]


def test_decoder_mask_is_causal_and_padding() -> None:
    m = M.decoder_self_mask(IDS, 0)
    assert m.shape == (2, 1, 4, 4)
    expected = torch.ones(4, 4, dtype=torch.bool).tril() & M.pairwise_padding_mask(IDS, 0)[0, 0]
    assert torch.equal(m[0, 0], expected)
    assert not m[0, 0, 3].any()  # a padded query row is empty


def test_cross_mask_is_real_query_and_real_key() -> None:
    tgt = torch.tensor([[1, 8, 0], [1, 0, 0]])
    m = M.cross_mask(tgt, IDS, 0)
    assert m.shape == (2, 1, 3, 4)
    assert m[0, 0].tolist() == [[True, True, True, False]] * 2 + [[False] * 4]
    assert m[1, 0].tolist() == [[True, False, False, False]] + [[False] * 4] * 2


def test_is_pad_conversion() -> None:
    a = M.padding_mask(IDS, 0)
    assert torch.equal(M.key_padding_to_is_pad(a), IDS == 0)


def test_cross_mask_from_the_key_mask_equals_the_one_from_ids() -> None:
    tgt = torch.tensor([[1, 5, 0], [1, 6, 7]])
    built = M.with_real_queries(M.padding_mask(IDS[:2], 0), tgt, 0)
    assert built.shape == (2, 1, 3, IDS.shape[1])
    assert torch.equal(built, M.cross_mask(tgt, IDS[:2], 0))
    assert not built[0, 0, 2].any()  # a padded query row allows nothing
