"""Batches and the token-budget sampler."""

from __future__ import annotations

import random

import torch

from attenzione.data import TokenBudgetSampler, collate, naive_batches, padding_ratio


def test_collate_pads_and_shifts() -> None:
    b = collate([([5, 6, 7], [8, 9]), ([5], [8, 9, 10])])
    assert b.src_ids.tolist() == [[5, 6, 7, 2], [5, 2, 0, 0]]
    assert b.tgt_in.tolist() == [[1, 8, 9, 0], [1, 8, 9, 10]]
    assert b.tgt_out.tolist() == [[8, 9, 2, 0], [8, 9, 10, 2]]
    assert b.n_tgt_tokens == 7 and b.n_src_tokens == 6
    assert b.to("cpu").src_ids.dtype == torch.long


def _skewed(n: int = 3000) -> list[tuple[int, int]]:
    rng = random.Random(0)
    out = []
    for _ in range(n):
        s = max(1, min(100, int(rng.lognormvariate(2.0, 0.6))))
        out.append((s, max(1, s + rng.randint(-2, 3))))
    return out


def test_token_budget_batches_cover_everything_once_and_fit_the_budget() -> None:
    lengths = _skewed()
    sampler = TokenBudgetSampler(lengths, max_tokens=600, seed=1)
    batches = list(sampler)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    for b in batches:
        width = max(max(lengths[i]) for i in b)
        assert width * len(b) <= 600 or len(b) == 1
    assert len(sampler) == len(batches)


def test_padding_is_far_below_naive_batching() -> None:
    lengths = _skewed()
    bucketed = padding_ratio(TokenBudgetSampler(lengths, max_tokens=600, seed=1), lengths)
    naive = padding_ratio(naive_batches(len(lengths), 64, seed=1), lengths)
    assert bucketed < 0.5 * naive


def test_determinism_by_seed_and_epoch() -> None:
    lengths = _skewed(500)
    a = TokenBudgetSampler(lengths, max_tokens=300, seed=5)
    b = TokenBudgetSampler(lengths, max_tokens=300, seed=5)
    assert list(a) == list(b)
    a.set_epoch(1)
    assert list(a) != list(b)
    b.set_epoch(1)
    assert list(a) == list(b)


def test_ranks_are_disjoint_and_equal_in_length() -> None:
    lengths = _skewed(700)
    ranks = [
        TokenBudgetSampler(lengths, max_tokens=300, seed=2, num_replicas=2, rank=r) for r in (0, 1)
    ]
    b0, b1 = list(ranks[0]), list(ranks[1])
    assert len(b0) == len(b1) == len(ranks[0])
    assert not {i for b in b0 for i in b} & {i for b in b1 for i in b}


def test_an_overlong_example_gets_its_own_batch() -> None:
    lengths = [(5, 5)] * 10 + [(500, 480)]
    batches = list(TokenBudgetSampler(lengths, max_tokens=100, seed=0))
    assert [10] in batches
