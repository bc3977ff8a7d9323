"""Decoding: greedy, sampling and beam search, on a scripted stub and on a real tiny model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch

from attenzione.config import DecodeConfig, ModelConfig
from attenzione.decoding import Coverage, WholeCharacters, _filter_logits, generate, utf8_roles
from attenzione.model import Transformer

PAD, BOS, EOS, A, B, C = 0, 1, 2, 3, 4, 5
V = 6


@dataclass
class StubCache:
    """Remembers each row's prefix so the stub can script p(next | prefix)."""

    prefixes: list[list[int]]
    length: int = 0

    def reorder(self, indices: torch.Tensor) -> StubCache:
        self.prefixes = [list(self.prefixes[i]) for i in indices.tolist()]
        return self


class ScriptedModel:
    """A 'model' whose next-token distribution is a table keyed by the prefix (bos excluded).

    The table is the textbook case where greedy search is not optimal:
    greedy takes A (0.6) and then must end with p(eos | A) = 0.5 → 0.30 in total, while
    B (0.4) followed by eos (0.9) → 0.36 is better, and beam search (K = 2) finds it.
    """

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {A: 0.6, B: 0.4},
        (A,): {EOS: 0.5, C: 0.4, B: 0.1},
        (B,): {EOS: 0.9, C: 0.1},
        (A, C): {EOS: 1.0},
        (B, C): {EOS: 1.0},
    }

    def __init__(self) -> None:
        self.config = SimpleNamespace(
            pad_id=PAD, bos_id=BOS, eos_id=EOS, max_len=50, tgt_vocab_size=V
        )

    def encode(self, src_ids: torch.Tensor) -> SimpleNamespace:
        b = src_ids.shape[0]
        return SimpleNamespace(memory=torch.zeros(b, 1, 1), memory_mask=torch.ones(b, 1, 1, 1))

    def init_cache(
        self, memory: torch.Tensor, memory_mask: torch.Tensor, capacity: int
    ) -> StubCache:
        return StubCache([[] for _ in range(memory.shape[0])])

    def next_dist(self, prefix: list[int]) -> dict[int, float]:
        """p(next token | prefix): the table's row (unlisted prefixes end)."""
        return self.TABLE.get(tuple(prefix), {EOS: 1.0})

    def decode(self, tgt_ids: torch.Tensor, cache: StubCache) -> SimpleNamespace:
        rows = []
        for r, tok in enumerate(tgt_ids[:, -1].tolist()):
            if tok != BOS:
                cache.prefixes[r].append(tok)
            dist = self.next_dist(cache.prefixes[r])
            logp = torch.full((V,), -1e9)
            for t, p in dist.items():
                logp[t] = math.log(p)
            rows.append(logp)
        cache.length += 1
        return SimpleNamespace(logits=torch.stack(rows)[:, None, :])


def _src(batch: int = 1) -> torch.Tensor:
    return torch.full((batch, 3), A, dtype=torch.long)


def test_stub_greedy_takes_the_locally_best_token() -> None:
    out = generate(ScriptedModel(), _src(), DecodeConfig(method="greedy"))
    assert out[0][0].tokens == [A]
    assert out[0][0].log_prob == pytest.approx(math.log(0.6 * 0.5))


def test_stub_beam_finds_the_better_sequence_with_known_scores() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    hyps = generate(ScriptedModel(), _src(), cfg)[0]
    assert [h.tokens for h in hyps] == [[B], [A]]
    assert hyps[0].score == pytest.approx(math.log(0.36))
    assert hyps[1].score == pytest.approx(math.log(0.30))


def test_stub_length_penalty_divides_by_length() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=1, length_penalty=1.0)
    best = generate(ScriptedModel(), _src(), cfg)[0][0]
    assert best.tokens == [B]
    assert best.score == pytest.approx(math.log(0.36) / 2)  # 2 tokens: B and <eos>


def test_stub_batch_sentences_are_independent() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2)
    out = generate(ScriptedModel(), _src(3), cfg)
    assert [h[0].tokens for h in out] == [[B], [B], [B]]


def test_stub_max_length_stops_unfinished_hypotheses() -> None:
    model = ScriptedModel()
    cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=1)
    out = generate(model, _src(), cfg)
    assert out[0][0].tokens == [A]  # cut after one token, no <eos> reached


def _tiny_model(**kw: object) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(
        src_vocab_size=23,
        tgt_vocab_size=29,
        d_model=24,
        n_heads=3,
        d_head=8,
        d_ff=32,
        n_enc_layers=2,
        n_dec_layers=2,
        dropout=0.0,
        max_len=64,
        **kw,  # type: ignore[arg-type]
    )
    return Transformer(cfg).eval()


def _batch() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, 23, (5, 9), generator=g)
    src[1, 6:] = PAD
    src[3, 3:] = PAD
    return src


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_beam_size_one_equals_greedy(norm: str) -> None:
    model = _tiny_model(norm=norm)
    src = _batch()
    greedy = generate(model, src, DecodeConfig(method="greedy"))
    beam1 = generate(model, src, DecodeConfig(method="beam", beam_size=1))
    assert [h[0].tokens for h in greedy] == [h[0].tokens for h in beam1]
    for g, b in zip(greedy, beam1, strict=True):
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-4)


def test_greedy_matches_uncached_argmax_decoding() -> None:
    """The cached loop must pick the same tokens as re-running the full decoder each step."""
    model = _tiny_model()
    src = _batch()
    cached = generate(model, src, DecodeConfig(method="greedy", max_len_a=0, max_len_b=8))
    enc = model.encode(src)
    for row in range(src.shape[0]):
        prefix = [BOS]
        tokens: list[int] = []
        for _ in range(8):
            ids = torch.tensor([prefix])
            logits = model.decode(
                ids, enc.memory[row : row + 1], enc.memory_mask[row : row + 1]
            ).logits
            nxt = int(logits[0, -1].argmax())
            if nxt == EOS:
                break
            tokens.append(nxt)
            prefix.append(nxt)
        assert cached[row][0].tokens == tokens


def test_greedy_is_independent_of_batch_composition() -> None:
    model = _tiny_model()
    src = _batch()
    together = generate(model, src, DecodeConfig(method="greedy"))
    for row in range(src.shape[0]):
        n = int((src[row] != PAD).sum())
        alone = generate(model, src[row : row + 1, :n], DecodeConfig(method="greedy"))
        assert alone[0][0].tokens == together[row][0].tokens


def test_beam_n_best_is_sorted_and_distinct() -> None:
    model = _tiny_model()
    hyps = generate(model, _batch(), DecodeConfig(method="beam", beam_size=4, n_best=4))
    for sent in hyps:
        assert 1 <= len(sent) <= 4
        scores = [h.score for h in sent]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in sent}) == len(sent)


def test_beam_never_worse_than_greedy_in_model_score() -> None:
    model = _tiny_model()
    src = _batch()
    greedy = generate(model, src, DecodeConfig(method="greedy"))
    beam = generate(model, src, DecodeConfig(method="beam", beam_size=5, length_penalty=0.0))
    for g, b in zip(greedy, beam, strict=True):
        assert b[0].log_prob >= g[0].log_prob - 1e-4


def test_seeded_sampling_is_reproducible_and_seeds_differ() -> None:
    model = _tiny_model()
    src = _batch()
    cfg = DecodeConfig(method="sample", seed=7, temperature=1.5, top_p=0.95)
    first = [h[0].tokens for h in generate(model, src, cfg)]
    again = [h[0].tokens for h in generate(model, src, cfg)]
    assert first == again
    others = [
        [
            h[0].tokens
            for h in generate(model, src, DecodeConfig(method="sample", seed=s, temperature=1.5))
        ]
        for s in range(8, 12)
    ]
    assert any(o != first for o in others)


def test_top_k_one_sampling_is_greedy() -> None:
    model = _tiny_model()
    src = _batch()
    greedy = [h[0].tokens for h in generate(model, src, DecodeConfig(method="greedy"))]
    topk1 = [
        h[0].tokens for h in generate(model, src, DecodeConfig(method="sample", top_k=1, seed=0))
    ]
    assert topk1 == greedy


def test_filter_logits_top_k_and_top_p() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    k2 = _filter_logits(logits, top_k=2, top_p=1.0)
    assert torch.isinf(k2[0, 2:]).all() and torch.isfinite(k2[0, :2]).all()
    p = _filter_logits(logits, top_k=0, top_p=0.75)  # 0.5 + 0.3 reaches 0.75: keep two
    assert torch.isfinite(p[0, :2]).all() and torch.isinf(p[0, 2:]).all()
    p1 = _filter_logits(logits, top_k=0, top_p=0.1)  # the top token is always kept
    assert torch.isfinite(p1[0, 0]) and torch.isinf(p1[0, 1:]).all()


def test_length_cap_follows_source_length() -> None:
    model = _tiny_model()
    src = _batch()
    out = generate(model, src, DecodeConfig(method="greedy", max_len_a=1.0, max_len_b=2))
    for row, hyps in enumerate(out):
        n = int((src[row] != PAD).sum())
        assert len(hyps[0].tokens) <= n + 2


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(method="nope"),
        dict(beam_size=0),
        dict(temperature=0.0),
        dict(top_p=0.0),
        dict(top_k=-1),
    ],
)
def test_decode_config_rejects_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        DecodeConfig(**kwargs)  # type: ignore[arg-type]


class _EagerToStop:
    """A real model whose every step puts most of the probability on <eos>."""

    def __init__(self, model: Transformer) -> None:
        self.model, self.config = model, model.config

    def encode(self, src_ids: torch.Tensor) -> object:
        return self.model.encode(src_ids)

    def init_cache(self, *args: object, **kw: object) -> object:
        return self.model.init_cache(*args, **kw)  # type: ignore[arg-type]

    def decode(self, *args: object, **kw: object) -> object:
        out = self.model.decode(*args, **kw)  # type: ignore[arg-type]
        out.logits[..., self.config.eos_id] += 100.0
        return out


@pytest.mark.parametrize("method", ["greedy", "beam", "sample"])
def test_min_len_forbids_an_early_eos(method: str) -> None:
    model = _EagerToStop(_tiny_model())
    free = generate(model, _batch(), DecodeConfig(method=method, max_len_a=0.0, max_len_b=6))
    cfg = DecodeConfig(method=method, max_len_a=0.0, max_len_b=6, min_len=6, seed=0)
    forced = generate(model, _batch(), cfg)
    assert all(h[0].tokens == [] for h in free)
    assert all(len(h[0].tokens) == 6 for h in forced)
    assert all(model.config.eos_id not in h[0].tokens for h in forced)


@pytest.mark.parametrize(
    "cfg",
    [
        DecodeConfig(method="greedy"),
        DecodeConfig(method="beam", beam_size=3, n_best=3),
        DecodeConfig(method="sample", seed=5),
    ],
    ids=["greedy", "beam", "sample"],
)
def test_banned_tokens_never_appear_and_follow_their_sentence(cfg: DecodeConfig) -> None:
    model = _tiny_model()
    src = _batch()
    free = generate(model, src, cfg)
    # ban, in each sentence, every token its unconstrained output used (never <eos>)
    banned = torch.zeros(src.shape[0], 29, dtype=torch.bool)
    for row, hyps in enumerate(free):
        for h in hyps:
            banned[row, h.tokens] = True
    assert banned.any()
    out = generate(model, src, cfg, banned=banned)
    for row, hyps in enumerate(out):
        for h in hyps:
            assert not banned[row, h.tokens].any(), (row, h.tokens)
    # nothing banned: exactly the unconstrained decoding
    none = generate(model, src, cfg, banned=torch.zeros_like(banned))
    assert [[h.tokens for h in s] for s in none] == [[h.tokens for h in s] for s in free]


def test_a_malformed_ban_is_refused() -> None:
    model, src = _tiny_model(), _batch()
    with pytest.raises(ValueError, match="shape"):
        generate(model, src, banned=torch.zeros(2, 29, dtype=torch.bool))
    eos = torch.zeros(src.shape[0], 29, dtype=torch.bool)
    eos[:, EOS] = True
    with pytest.raises(ValueError, match="<eos>"):
        generate(model, src, banned=eos)


def _needs_c(*needs: int) -> Coverage:
    """Coverage of one symbol, written only by the stub's token C; ``needs[b]`` per sentence."""
    table = torch.zeros(V, 1, dtype=torch.long)
    table[C, 0] = 1
    return Coverage(need=torch.tensor([[n] for n in needs], dtype=torch.long), table=table)


def test_coverage_ranks_down_what_owes_and_keeps_the_model_scores() -> None:
    # without coverage B·eos (0.36) beats A·eos (0.30) and A·C·eos (0.24); needing C, the
    # best is A·C, and a hypothesis that owes C keeps its log-prob but loses score
    w = 10.0
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0, number_coverage=w)
    hyps = generate(ScriptedModel(), _src(), cfg, coverage=_needs_c(1))[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert hyps[0].score == pytest.approx(math.log(0.24))
    assert hyps[1].score == pytest.approx(math.log(0.36) - w)
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36)])
    # a weak push changes nothing: 0.36 still beats 0.24 by more than 0.1
    weak = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0, number_coverage=0.1)
    assert generate(ScriptedModel(), _src(), weak, coverage=_needs_c(1))[0][0].tokens == [B]


def test_coverage_is_off_at_zero_and_for_greedy_and_sampling() -> None:
    # greedy has no other hypothesis to choose: pushing it would only make it write on
    for cfg in (
        DecodeConfig(method="beam", beam_size=2, length_penalty=0.0, number_coverage=0.0),
        DecodeConfig(method="greedy", number_coverage=10.0),
        DecodeConfig(method="sample", top_k=1, number_coverage=10.0),
    ):
        plain = generate(ScriptedModel(), _src(), cfg)[0][0]
        pushed = generate(ScriptedModel(), _src(), cfg, coverage=_needs_c(1))[0][0]
        assert pushed == plain


def test_coverage_weights_charge_each_column_its_own_amount() -> None:
    # column 0 is C, weighed 10; column 1 (also C) is weighed 0 and so not covered at all.
    # The weights replace number_coverage, which is 0 here and would turn a plain coverage off
    table = torch.zeros(V, 2, dtype=torch.long)
    table[C] = 1
    weighed = Coverage(need=torch.tensor([[1, 0]]), table=table, weight=torch.tensor([10.0, 0.0]))
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0, number_coverage=0)
    hyps = generate(ScriptedModel(), _src(), cfg, coverage=weighed)[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert hyps[1].score == pytest.approx(math.log(0.36) - 10.0)
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36)])
    # owing only a column weighed 0 costs nothing: B·<eos> wins as without coverage
    off = Coverage(need=torch.tensor([[0, 1]]), table=table, weight=torch.tensor([10.0, 0.0]))
    assert generate(ScriptedModel(), _src(), cfg, coverage=off)[0][0].tokens == [B]
    assert (
        generate(ScriptedModel(), _src(), cfg, coverage=off)[0]
        == generate(ScriptedModel(), _src(), cfg)[0]
    )
    # two symbols owed at 10 each: the charge is 20
    both = Coverage(need=torch.tensor([[1, 1]]), table=table, weight=torch.tensor([10.0, 10.0]))
    hyps = generate(ScriptedModel(), _src(), cfg, coverage=both)[0]
    assert hyps[1].tokens == [B] and hyps[1].score == pytest.approx(math.log(0.36) - 20.0)


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (torch.tensor([1.0, 1.0]), "weight needs shape"),
        (torch.tensor([-1.0]), "finite and >= 0"),
        (torch.tensor([float("nan")]), "finite and >= 0"),
        (torch.tensor([float("inf")]), "finite and >= 0"),
    ],
)
def test_malformed_coverage_weights_are_refused(weight: torch.Tensor, message: str) -> None:
    bad = Coverage(need=_needs_c(1).need, table=_needs_c(1).table, weight=weight)
    with pytest.raises(ValueError, match=message):
        generate(ScriptedModel(), _src(), coverage=bad)


class _Attending(ScriptedModel):
    """ScriptedModel's table, with the cross-attention of its newest position scripted too.

    The source is [A, A, <eos>]. Layer 1 (the one measured) attends as ATTN says; layer 0
    spreads evenly, so reading the wrong layer gives other scores. B·<eos>, the likeliest,
    only ever looks at the first token; A·<eos> half-covers the second; A·C·<eos> covers both.
    """

    ATTN: dict[tuple[int, ...], list[float]] = {
        (): [1.0, 0.0, 0.0],
        (A,): [0.0, 0.5, 0.5],
        (B,): [1.0, 0.0, 0.0],
        (A, C): [0.0, 0.5, 0.5],
    }

    def __init__(self) -> None:
        super().__init__()
        self.config.n_dec_layers = 2
        self.asked = 0  # decode calls that asked for the attention weights

    def decode(
        self, tgt_ids: torch.Tensor, cache: StubCache, need_weights: bool = False
    ) -> SimpleNamespace:
        out = super().decode(tgt_ids, cache)
        if need_weights:
            self.asked += 1
            rows = [self.ATTN.get(tuple(p), [1 / 3] * 3) for p in cache.prefixes]
            layer1 = torch.tensor(rows)[:, None, None, :].expand(-1, 2, 1, 3)  # (N,H,1,S)
            out.cross_attentions = [torch.full_like(layer1, 1 / 3), layer1]
        return out


def _covered(*received: float) -> float:
    return sum(math.log(min(max(r, 1e-6), 1.0)) for r in received)


def test_attention_coverage_ranks_down_what_left_its_source_unattended() -> None:
    src = torch.tensor([[A, A, EOS]])
    plain = DecodeConfig(method="beam", beam_size=3, n_best=3, length_penalty=0.0)
    assert generate(_Attending(), src, plain)[0][0].tokens == [B]  # the model's own choice
    # the <eos> position's attention is not counted; B·<eos> never attended to token 2
    model_and_cover = {
        (B,): (math.log(0.36), _covered(2.0, 0.0)),
        (A,): (math.log(0.30), _covered(1.0, 0.5)),
        (A, C): (math.log(0.24), _covered(1.0, 1.0)),
    }
    for beta, best in ((0.02, [A]), (1.0, [A, C])):
        cfg = DecodeConfig(
            method="beam", beam_size=4, n_best=4, length_penalty=0.0, attention_coverage=beta
        )
        model = _Attending()
        hyps = {tuple(h.tokens): h for h in generate(model, src, cfg, attend=1)[0]}
        assert list(hyps)[0] == tuple(best)
        assert model.asked > 0
        assert {(A,), (A, C)} <= set(hyps) and ((B,) in hyps) == (beta < 1)
        for tokens, (log_prob, cover) in model_and_cover.items():
            if tokens not in hyps:
                continue  # B·<eos>, at the strong push: ranked below the 4 kept
            assert hyps[tokens].score == pytest.approx(log_prob + beta * cover), tokens
            assert hyps[tokens].log_prob == pytest.approx(log_prob)  # the model's own
    # layer 0 spreads its attention evenly: every hypothesis covers less, A·C still most
    far = DecodeConfig(
        method="beam", beam_size=3, n_best=3, length_penalty=0.0, attention_coverage=1.0
    )
    scores = {tuple(h.tokens): h.score for h in generate(_Attending(), src, far, attend=0)[0]}
    assert scores[(A,)] == pytest.approx(math.log(0.30) + _covered(2 / 3, 2 / 3))


class _SwappingAttention(_Attending):
    """_Swapping's table (the two beams trade rows at step 1), with attention that differs by
    beam: after C the second token gets all of it, after A a tenth."""

    TABLE = {
        (): {C: 0.55, A: 0.45},
        (C,): {B: 0.6, EOS: 0.4},
        (A,): {B: 0.9, EOS: 0.1},
        (C, B): {EOS: 1.0},
        (A, B): {EOS: 1.0},
    }
    ATTN = {(): [1.0, 0.0, 0.0], (C,): [0.0, 1.0, 0.0], (A,): [0.0, 0.1, 0.9]}


def test_attention_coverage_follows_each_beam_through_reordering() -> None:
    # at step 1 A·B (0.405) overtakes C·B (0.33) and the rows swap; the attention each has
    # received must swap with them. The last step attends a third to each token.
    cfg = DecodeConfig(
        method="beam", beam_size=2, n_best=2, length_penalty=0.0, attention_coverage=1.0
    )
    src = torch.tensor([[A, A, EOS]])
    out = generate(_SwappingAttention(), src, cfg, attend=1)[0]
    hyps = {tuple(h.tokens): h.score for h in out}
    assert list(hyps) == [(C, B), (A, B)]
    assert hyps[(C, B)] == pytest.approx(math.log(0.55 * 0.6) + _covered(1 + 1 / 3, 1 + 1 / 3))
    assert hyps[(A, B)] == pytest.approx(math.log(0.45 * 0.9) + _covered(1 + 1 / 3, 0.1 + 1 / 3))


def test_attention_coverage_is_off_at_zero_without_a_layer_and_for_greedy() -> None:
    src = torch.tensor([[A, A, EOS]])
    for cfg, attend in (
        (DecodeConfig(method="beam", beam_size=3, attention_coverage=0.0), 1),
        (DecodeConfig(method="beam", beam_size=3, attention_coverage=1.0), None),
        (DecodeConfig(method="greedy", attention_coverage=1.0), 1),
        (DecodeConfig(method="sample", top_k=1, attention_coverage=1.0), 1),
    ):
        model = _Attending()
        assert generate(model, src, cfg, attend=attend) == generate(ScriptedModel(), src, cfg)
        assert model.asked == 0  # the weights are not even computed
    with pytest.raises(ValueError, match="decoder layer"):
        generate(_Attending(), src, attend=2)
    with pytest.raises(ValueError, match="attention_coverage"):
        DecodeConfig(attention_coverage=float("nan"))


class _Swapping(ScriptedModel):
    """Beam rows swap places at step 1: the row that wrote C (step 0's best) falls behind."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {C: 0.55, A: 0.45},
        (C,): {B: 0.6, EOS: 0.4},
        (A,): {B: 0.9, EOS: 0.1},
        (C, B): {EOS: 1.0},
        (A, B): {EOS: 1.0},
    }


def test_coverage_counts_follow_each_sentence_and_beam_through_reordering() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0, number_coverage=10.0)
    out = generate(_Swapping(), _src(2), cfg, coverage=_needs_c(1, 0))
    # sentence 0 needs C: C·B (0.33) wins over A·B (0.405) only if the count of C went with
    # its row when the rows were reordered; sentence 1 needs nothing
    assert out[0][0].tokens == [C, B]
    assert out[0][0].log_prob == pytest.approx(math.log(0.55 * 0.6))
    assert out[1][0].tokens == [A, B]


class _LateChoice(ScriptedModel):
    """Two endings at step 1 (A·<eos>, B·<eos>), then after A·B: end (0.6) or write C (0.4)."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {A: 0.6, B: 0.4},
        (A,): {EOS: 0.9, B: 0.1},
        (B,): {EOS: 0.9, B: 0.1},
        (A, B): {EOS: 0.6, C: 0.4},
        (B, B): {EOS: 0.7, C: 0.3},
    }


def test_coverage_of_several_sentences_survives_one_stopping_early() -> None:
    # the middle sentence needs nothing and is done at step 1; the rows of the other two
    # close up, and at step 2 each must still know that it owes C (or A·B·<eos> would win)
    cfg = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0, number_coverage=10.0)
    out = generate(_LateChoice(), _src(3), cfg, coverage=_needs_c(1, 0, 1))
    assert [h[0].tokens for h in out] == [[A, B, C], [A], [A, B, C]]
    assert [h[0].log_prob for h in out] == pytest.approx(
        [math.log(0.6 * 0.1 * 0.4), math.log(0.6 * 0.9), math.log(0.6 * 0.1 * 0.4)]
    )


class _Babbling(ScriptedModel):
    """After A the model ends (0.7) or writes B again and again (0.3); C never comes."""

    def next_dist(self, prefix: list[int]) -> dict[int, float]:
        return {A: 1.0} if not prefix else {EOS: 0.7, B: 0.3}


@pytest.mark.parametrize("beam", [1, 2, 4])
def test_a_need_no_beam_can_meet_does_not_make_the_output_babble(beam: int) -> None:
    # the search goes on to the length cap looking for C, but what it returns is the best
    # ending it found, not a hypothesis cut at the cap
    cfg = DecodeConfig(method="beam", beam_size=beam, number_coverage=4.0)
    best = generate(_Babbling(), _src(), cfg, coverage=_needs_c(1))[0][0]
    assert best.tokens == [A]
    assert best.log_prob == pytest.approx(math.log(0.7))


def test_a_malformed_coverage_is_refused() -> None:
    with pytest.raises(ValueError, match="shapes"):
        generate(ScriptedModel(), _src(2), coverage=_needs_c(1))
    bad = Coverage(need=torch.ones(1, 1), table=torch.ones(V, 1))
    with pytest.raises(ValueError, match="integer"):
        generate(ScriptedModel(), _src(), coverage=bad)
    with pytest.raises(ValueError, match="number_coverage"):
        DecodeConfig(number_coverage=-1.0)


class _NeverEnding(ScriptedModel):
    """After A: end (0.7) or start writing B, and once B is written, never end."""

    def next_dist(self, prefix: list[int]) -> dict[int, float]:
        return {A: 1.0} if not prefix else {B: 1.0} if B in prefix else {EOS: 0.7, B: 0.3}


def test_a_hypothesis_cut_at_the_cap_never_beats_one_that_ended() -> None:
    # B is the owed symbol; only hypotheses that never end write it. Cut at the cap they owe
    # nothing and would outrank A·<eos>; but with K = 1 the search went on past A·<eos> only
    # for the coverage, so what it cut at the cap is not returned
    table = torch.zeros(V, 1, dtype=torch.long)
    table[B, 0] = 1
    need_b = Coverage(need=torch.tensor([[1]]), table=table)
    cfg = DecodeConfig(method="beam", beam_size=1, number_coverage=4.0)
    assert generate(_NeverEnding(), _src(), cfg, coverage=need_b)[0][0].tokens == [A]


# the stub's vocabulary as UTF-8: A a lead byte announcing one continuation, B a
# continuation byte, C an ordinary piece
ROLES = torch.tensor([0, 0, 0, 1, -1, 0])


class _BrokenBytes(ScriptedModel):
    """A model that would break UTF-8: it likes a stray continuation byte first, and after
    the lead byte a word piece more than the continuation it owes."""

    TABLE = {
        (): {B: 0.5, A: 0.4, C: 0.1},
        (A,): {C: 0.6, EOS: 0.3, B: 0.1},
        (A, B): {EOS: 1.0},
    }


def _well_formed(tokens: list[int]) -> bool:
    owed = 0
    for t in tokens:
        if (t == B) != (owed > 0):
            return False
        owed = owed - 1 if t == B else (1 if t == A else 0)
    return owed == 0


def test_utf8_roles_of_byte_pieces() -> None:
    pieces = ["<0x41>", "<0xC2>", "<0xE2>", "<0xF0>", "<0xA3>", "<0xC1>", "<0xFF>"]
    roles = utf8_roles({p: i + 2 for i, p in enumerate(pieces)}, 10)  # ids 0, 1, 9: no bytes
    assert roles.tolist() == [0, 0, 0, 1, 2, 3, -1, -2, -2, 0]


@pytest.mark.parametrize(
    "cfg",
    [
        DecodeConfig(method="greedy"),
        DecodeConfig(method="beam", beam_size=3, n_best=3),
        DecodeConfig(method="sample", seed=5),
        DecodeConfig(method="sample", seed=6),
    ],
    ids=["greedy", "beam", "sample5", "sample6"],
)
def test_byte_pieces_always_spell_whole_characters(cfg: DecodeConfig) -> None:
    free = generate(_BrokenBytes(), _src(2), cfg)
    if cfg.method != "sample":  # the model's own choice is broken (a sample may not be)
        assert not all(_well_formed(h.tokens) for s in free for h in s)
    out = generate(_BrokenBytes(), _src(2), cfg, utf8=ROLES)
    for hyps in out:
        assert hyps and all(_well_formed(h.tokens) for h in hyps), hyps
    if cfg.method == "greedy":
        # the choice is renormalised over what is allowed: A is 0.4 of the 0.5 left
        assert out[0][0].tokens == [A, B]
        assert out[0][0].log_prob == pytest.approx(math.log(0.8))


def test_a_row_whose_continuations_are_all_banned_is_left_to_the_model() -> None:
    banned = torch.zeros(1, V, dtype=torch.bool)
    banned[0, B] = True  # no continuation may be written: the guard cannot hold, nor empty
    out = generate(_BrokenBytes(), _src(), DecodeConfig(method="greedy"), banned=banned, utf8=ROLES)
    assert out[0][0].tokens == [A, C]
    with pytest.raises(ValueError, match="one role per target token"):
        generate(_BrokenBytes(), _src(), utf8=ROLES[:5])


class _SwappedBytes(ScriptedModel):
    """Spelling a three-byte character (A = lead byte 0xE2, B = 0x89, C = 0xA4: "≤"), the
    model likes the continuation bytes in the wrong order: A C B is "⊉", not the source's."""

    TABLE = {
        (): {A: 1.0},
        (A,): {C: 0.6, B: 0.4},
        (A, C): {B: 0.7, C: 0.3},
        (A, B): {B: 0.6, C: 0.4},
    }


# A announces two continuation bytes, B and C are continuation bytes
ROLES_3 = torch.tensor([0, 0, 0, 2, -1, -1])
BYTE_OF = torch.tensor([-1, -1, -1, 0xE2, 0x89, 0xA4])


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="beam", beam_size=3, n_best=3)],
    ids=["greedy", "beam"],
)
def test_byte_pieces_spell_only_the_sources_characters(cfg: DecodeConfig) -> None:
    le = "\u2264".encode()  # "≤" = E2 89 A4
    assert le == bytes([0xE2, 0x89, 0xA4])
    free = generate(_SwappedBytes(), _src(2), cfg, utf8=ROLES_3)
    assert free[0][0].tokens == [A, C, B]  # well-formed UTF-8, but "⊉"
    whole = WholeCharacters(BYTE_OF, [frozenset({le}), frozenset()])
    out = generate(_SwappedBytes(), _src(2), cfg, utf8=ROLES_3, whole=whole)
    assert out[0][0].tokens == [A, B, C]  # only "≤" can be spelled
    assert not any(h.tokens[:2] == [A, C] for h in out[0])
    # the bytes keep the model's probabilities (the UTF-8 check's, over the continuation
    # bytes), not renormalised over the one byte left: finishing a character is not free
    assert out[0][0].log_prob == pytest.approx(math.log(0.4 * 0.4))
    # the second sentence has no character to spell: left to the UTF-8 check alone
    assert out[1][0].tokens == free[1][0].tokens
    with pytest.raises(ValueError, match="whole needs utf8"):
        generate(_SwappedBytes(), _src(2), cfg, whole=whole)
    with pytest.raises(ValueError, match="the byte of each of 6 target tokens"):
        short = WholeCharacters(BYTE_OF[:5], [frozenset({le}), frozenset()])
        generate(_SwappedBytes(), _src(2), cfg, utf8=ROLES_3, whole=short)
