"""Decoding: the loop and its three strategies (greedy, sampling, beam search), on a scripted
stub and on a real tiny model; and that the loop knows constraints and ranking terms only
through their one hook protocol (:mod:`attenzione.search.hooks`: :class:`Constraint`,
:class:`Term`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import Constraint, Term, generate
from attenzione.search.topk import TOP_K_BLOCK, top_k
from decoding_stubs import (
    BOS,
    EOS,
    PAD,
    TINY_TGT_VOCAB,
    A,
    Attending,
    B,
    C,
    ScriptedModel,
    V,
    src,
    tiny_batch,
    tiny_model,
)


def test_stub_greedy_takes_the_locally_best_token() -> None:
    out = generate(ScriptedModel(), src(), DecodeConfig(method="greedy"))
    assert out[0][0].tokens == [A]
    assert out[0][0].log_prob == pytest.approx(math.log(0.6 * 0.5))


def test_stub_beam_finds_the_better_sequence_with_known_scores() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    hyps = generate(ScriptedModel(), src(), cfg)[0]
    assert [h.tokens for h in hyps] == [[B], [A]]
    assert hyps[0].score == pytest.approx(math.log(0.36))
    assert hyps[1].score == pytest.approx(math.log(0.30))


def test_stub_length_penalty_divides_by_length() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=1, length_penalty=1.0)
    best = generate(ScriptedModel(), src(), cfg)[0][0]
    assert best.tokens == [B]
    assert best.score == pytest.approx(math.log(0.36) / 2)  # 2 tokens: B and <eos>
    assert best.log_prob == pytest.approx(math.log(0.36))  # the model's own, not divided


def test_stub_batch_sentences_are_independent() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2)
    out = generate(ScriptedModel(), src(3), cfg)
    assert [h[0].tokens for h in out] == [[B], [B], [B]]


def test_stub_max_length_stops_unfinished_hypotheses() -> None:
    model = ScriptedModel()
    cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=1)
    out = generate(model, src(), cfg)
    assert out[0][0].tokens == [A]  # cut after one token, no <eos> reached


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_beam_size_one_equals_greedy(norm: str) -> None:
    model = tiny_model(norm=norm)
    ids = tiny_batch()
    greedy = generate(model, ids, DecodeConfig(method="greedy"))
    beam1 = generate(model, ids, DecodeConfig(method="beam", beam_size=1))
    assert [h[0].tokens for h in greedy] == [h[0].tokens for h in beam1]
    for g, b in zip(greedy, beam1, strict=True):
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-4)


def test_greedy_matches_uncached_argmax_decoding() -> None:
    """The cached loop must pick the same tokens as re-running the full decoder each step."""
    model = tiny_model()
    ids = tiny_batch()
    cached = generate(model, ids, DecodeConfig(method="greedy", max_len_a=0, max_len_b=8))
    enc = model.encode(ids)
    for row in range(ids.shape[0]):
        prefix = [BOS]
        tokens: list[int] = []
        for _ in range(8):
            logits = model.decode(
                torch.tensor([prefix]), enc.memory[row : row + 1], enc.memory_mask[row : row + 1]
            ).logits
            nxt = int(logits[0, -1].argmax())
            if nxt == EOS:
                break
            tokens.append(nxt)
            prefix.append(nxt)
        assert cached[row][0].tokens == tokens


def test_greedy_is_independent_of_batch_composition() -> None:
    model = tiny_model()
    ids = tiny_batch()
    together = generate(model, ids, DecodeConfig(method="greedy"))
    for row in range(ids.shape[0]):
        n = int((ids[row] != PAD).sum())
        alone = generate(model, ids[row : row + 1, :n], DecodeConfig(method="greedy"))
        assert alone[0][0].tokens == together[row][0].tokens


def test_beam_n_best_is_sorted_and_distinct() -> None:
    model = tiny_model()
    hyps = generate(model, tiny_batch(), DecodeConfig(method="beam", beam_size=4, n_best=4))
    for sent in hyps:
        assert 1 <= len(sent) <= 4
        scores = [h.score for h in sent]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in sent}) == len(sent)


def test_beam_never_worse_than_greedy_in_model_score() -> None:
    model = tiny_model()
    ids = tiny_batch()
    greedy = generate(model, ids, DecodeConfig(method="greedy"))
    beam = generate(model, ids, DecodeConfig(method="beam", beam_size=5, length_penalty=0.0))
    for g, b in zip(greedy, beam, strict=True):
        assert b[0].log_prob >= g[0].log_prob - 1e-4


def test_seeded_sampling_is_reproducible_and_seeds_differ() -> None:
    model = tiny_model()
    ids = tiny_batch()
    cfg = DecodeConfig(method="sample", seed=7, temperature=1.5, top_p=0.95)
    first = [h[0].tokens for h in generate(model, ids, cfg)]
    again = [h[0].tokens for h in generate(model, ids, cfg)]
    assert first == again
    others = [
        [
            h[0].tokens
            for h in generate(model, ids, DecodeConfig(method="sample", seed=s, temperature=1.5))
        ]
        for s in range(8, 12)
    ]
    assert any(o != first for o in others)


def test_top_k_one_sampling_is_greedy() -> None:
    model = tiny_model()
    ids = tiny_batch()
    greedy = [h[0].tokens for h in generate(model, ids, DecodeConfig(method="greedy"))]
    topk1 = [
        h[0].tokens for h in generate(model, ids, DecodeConfig(method="sample", top_k=1, seed=0))
    ]
    assert topk1 == greedy


class _Spread(ScriptedModel):
    """The first token is A (0.5), B (0.3), C (0.15) or <eos> (0.05); then the end."""

    TABLE = {(): {A: 0.5, B: 0.3, C: 0.15, EOS: 0.05}}


FIRST = {A: 0.5, B: 0.3, C: 0.15, EOS: 0.05}


def _first_tokens(**kw: object) -> Counter[int]:
    """What 400 sampled sentences of :class:`_Spread` begin with (<eos> for an empty one),
    checking that each keeps the model's own log-prob, not the filtered distribution's."""
    cfg = DecodeConfig(method="sample", seed=3, **kw)  # type: ignore[arg-type]
    out = generate(_Spread(), src(400), cfg)
    firsts: Counter[int] = Counter()
    for hyps in out:
        (h,) = hyps
        first = h.tokens[0] if h.tokens else EOS
        assert h.tokens in ([], [first])
        assert h.log_prob == pytest.approx(math.log(FIRST[first]), abs=1e-5)
        firsts[first] += 1
    return firsts


@pytest.mark.parametrize(
    ("kw", "kept"),
    [
        ({}, {A, B, C, EOS}),
        ({"top_k": 2}, {A, B}),
        ({"top_k": 3}, {A, B, C}),
        ({"top_p": 0.75}, {A, B}),  # 0.5 + 0.3 reaches 0.75: C and <eos> are dropped
        ({"top_p": 0.9}, {A, B, C}),
        ({"top_p": 0.1}, {A}),  # the likeliest token is always kept
        ({"top_k": 3, "top_p": 0.75}, {A, B}),
        ({"temperature": 0.01}, {A}),
    ],
)
def test_sampling_draws_only_from_the_top_k_and_the_top_p_nucleus(
    kw: dict[str, object], kept: set[int]
) -> None:
    firsts = _first_tokens(**kw)
    assert set(firsts) == kept  # 400 draws: each token kept is drawn, none other ever
    if kept == {A, B, C, EOS}:  # unfiltered: roughly the model's distribution
        assert firsts[A] > firsts[B] > firsts[C] > firsts[EOS]


def test_length_cap_follows_source_length() -> None:
    model = tiny_model()
    ids = tiny_batch()
    out = generate(model, ids, DecodeConfig(method="greedy", max_len_a=1.0, max_len_b=2))
    for row, hyps in enumerate(out):
        n = int((ids[row] != PAD).sum())
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
    model = _EagerToStop(tiny_model())
    free = generate(model, tiny_batch(), DecodeConfig(method=method, max_len_a=0.0, max_len_b=6))
    cfg = DecodeConfig(method=method, max_len_a=0.0, max_len_b=6, min_len=6, seed=0)
    forced = generate(model, tiny_batch(), cfg)
    assert all(h[0].tokens == [] for h in free)
    assert all(len(h[0].tokens) == 6 for h in forced)
    assert all(model.config.eos_id not in h[0].tokens for h in forced)


# ---------------------------------------------------------------- the loop's interfaces
# The constraint and terms below are defined here, not in the package: the loop must serve
# them as it serves its own, with no per-feature knowledge.


class _NotAfter(Constraint):
    """A hard constraint the package does not have: ``then`` may not follow ``first``."""

    def __init__(self, first: int, then: int) -> None:
        self.first, self.then = first, then
        self.last = torch.zeros(0, dtype=torch.long)  # (N,) each row's last token

    def start(self, batch: int, vocab: int) -> None:
        self.last = torch.full((batch,), -1, dtype=torch.long)

    def mask(self, scores: torch.Tensor) -> None:
        scores[self.last == self.first, self.then] = float("-inf")

    def reorder(self, rows: torch.Tensor | None, tokens: torch.Tensor | None) -> None:
        if rows is not None:
            self.last = self.last[rows]
        if tokens is not None:
            self.last = tokens.clone()


class _EndsWith(Term):
    """A ranking term the package does not have: a hypothesis whose last written token is
    ``token`` pays ``cost`` at its end; with ``owing``, one that never wrote ``token`` owes
    it (and pays ``cost``) instead."""

    def __init__(self, token: int, cost: float, *, owing: bool = False) -> None:
        self.token, self.cost, self.owing = token, cost, owing
        self.last: list[int] = []
        self.wrote: list[bool] = []

    def start(self, batch: int, vocab: int) -> None:
        self.last = [-1] * batch
        self.wrote = [False] * batch

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        if self.owing:
            owes = not (self.wrote[row] or token == self.token)
            return (self.cost if owes else 0.0), owes
        last = token if token != EOS else self.last[row]
        return (self.cost if last == self.token else 0.0), False

    def reorder(self, rows: torch.Tensor | None, tokens: torch.Tensor | None) -> None:
        parents = list(range(len(self.last))) if rows is None else rows.tolist()
        self.wrote = [self.wrote[p] for p in parents]
        self.last = [self.last[p] for p in parents]
        if tokens is not None:
            self.wrote = [
                w or t == self.token for w, t in zip(self.wrote, tokens.tolist(), strict=True)
            ]
            self.last = tokens.tolist()


@dataclass
class _Toll:
    """A charge: ``now`` (N,) on every continuation of a row, ``per_token`` on each
    continuation that writes ``token``."""

    now: torch.Tensor | None
    token: int
    per_token: float

    def apply(self, rank: torch.Tensor) -> None:
        rank[:, self.token] -= self.per_token


class _Tolls(Term):
    """A ranking term charged while searching: each continuation that writes ``token`` pays
    ``on_write``, and each row that has just written it pays ``after`` on all it writes next."""

    def __init__(self, token: int, *, on_write: float = 0.0, after: float = 0.0) -> None:
        self.token, self.on_write, self.after = token, on_write, after
        self.just_wrote = torch.zeros(0, dtype=torch.bool)

    def start(self, batch: int, vocab: int) -> None:
        self.just_wrote = torch.zeros(batch, dtype=torch.bool)

    def charge(
        self, log_probs: torch.Tensor, attention: Sequence[torch.Tensor] | None
    ) -> _Toll | None:
        now = self.just_wrote.float() * self.after if self.after else None
        return _Toll(now, self.token, self.on_write)

    def reorder(self, rows: torch.Tensor | None, tokens: torch.Tensor | None) -> None:
        if rows is not None:
            self.just_wrote = self.just_wrote[rows]
        if tokens is not None:
            self.just_wrote = tokens == self.token


@pytest.mark.parametrize(
    "cfg",
    [
        DecodeConfig(method="greedy"),
        DecodeConfig(method="sample", top_k=1, seed=0),
        DecodeConfig(method="sample", seed=4),
    ],
    ids=["greedy", "sample-top1", "sample"],
)
def test_a_constraint_defined_outside_the_package_holds_for_greedy_and_sampling(
    cfg: DecodeConfig,
) -> None:
    # A·<eos> is banned: after A the choice is renormalised over C (0.4) and B (0.1)
    out = generate(ScriptedModel(), src(4), cfg, constraints=[_NotAfter(A, EOS)])
    for (h,) in out:
        assert h.tokens in ([A, C], [A, B], [B], [B, C])
    if cfg.top_k == 1 or cfg.method == "greedy":
        assert [h[0].tokens for h in out] == [[A, C]] * 4
        assert out[0][0].log_prob == pytest.approx(math.log(0.6 * 0.8))


def test_a_constraint_defined_outside_the_package_follows_beams_and_sentences() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    free = generate(ScriptedModel(), src(3), cfg)
    assert [[h.tokens for h in s] for s in free] == [[[B], [A]]] * 3
    out = generate(ScriptedModel(), src(3), cfg, constraints=[_NotAfter(A, EOS)])
    # A·<eos> cannot end: renormalised, A·C is 0.6·0.8 = 0.48 and beats B·<eos> (0.36)
    for hyps in out:
        assert [h.tokens for h in hyps] == [[A, C], [B]]
        assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.48), math.log(0.36)])
        assert [h.score for h in hyps] == pytest.approx([math.log(0.48), math.log(0.36)])


def test_a_term_defined_outside_the_package_charges_a_hypothesis_at_its_end() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    out = generate(ScriptedModel(), src(2), cfg, terms=[_EndsWith(B, 10.0)])
    for hyps in out:  # B·<eos> (0.36) pays 10 in ranking, and A·<eos> (0.30) wins
        assert [h.tokens for h in hyps] == [[A], [B]]
        assert [h.score for h in hyps] == pytest.approx([math.log(0.30), math.log(0.36) - 10])
        assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.30), math.log(0.36)])


def test_what_a_term_says_is_owed_keeps_the_search_going() -> None:
    # The same charge for not writing C, with and without saying so: a hypothesis that owes
    # does not count towards the K that stop the search, which goes on and finds A·C·<eos>
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    owing = generate(ScriptedModel(), src(), cfg, terms=[_EndsWith(C, 10.0, owing=True)])[0]
    assert [h.tokens for h in owing] == [[A, C], [B]]
    assert [h.score for h in owing] == pytest.approx([math.log(0.24), math.log(0.36) - 10])

    class _Charges(_EndsWith):
        def at_end(self, row: int, token: int) -> tuple[float, bool]:
            return super().at_end(row, token)[0], False  # charges, never owes

    charged = generate(ScriptedModel(), src(), cfg, terms=[_Charges(C, 10.0, owing=True)])[0]
    # the search stopped with B·<eos> and A·<eos>, both charged: the model's order again
    assert [h.tokens for h in charged] == [[B], [A]]
    assert [h.score for h in charged] == pytest.approx([math.log(0.36) - 10, math.log(0.30) - 10])


def test_a_term_defined_outside_the_package_charges_continuations_while_searching() -> None:
    one = DecodeConfig(method="beam", beam_size=1, length_penalty=0.0)
    # writing A costs 10 in ranking: one beam takes B (0.4) at the first step, then <eos>
    best = generate(ScriptedModel(), src(), one, terms=[_Tolls(A, on_write=10.0)])[0][0]
    assert best.tokens == [B]
    assert best.score == pytest.approx(math.log(0.36))
    assert best.log_prob == pytest.approx(math.log(0.36))
    # a row that has written A pays on everything it writes next (Charge.now), and keeps
    # what it paid in its score: A·<eos> ranks 1 lower; at 10 it falls out of the top K
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    for sent in generate(ScriptedModel(), src(2), cfg, terms=[_Tolls(A, after=1.0)]):
        assert [h.tokens for h in sent] == [[B], [A]]
        assert [h.score for h in sent] == pytest.approx([math.log(0.36), math.log(0.30) - 1])
        assert [h.log_prob for h in sent] == pytest.approx([math.log(0.36), math.log(0.30)])
    for sent in generate(ScriptedModel(), src(2), cfg, terms=[_Tolls(A, after=10.0)]):
        assert [h.tokens for h in sent] == [[B], [B, C]]
        assert [h.score for h in sent] == pytest.approx([math.log(0.36), math.log(0.04)])


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="sample", seed=2)],
    ids=["greedy", "sample"],
)
def test_greedy_decoding_and_sampling_ignore_terms(cfg: DecodeConfig) -> None:
    model = Attending()
    plain = generate(model, src(3), cfg)
    terms = [_EndsWith(A, 10.0), _EndsWith(C, 10.0, owing=True), _Tolls(A, on_write=10.0)]
    assert generate(model, src(3), cfg, terms=terms) == plain


class _Recorder(Constraint, Term):
    """Both a constraint and a term that allows and charges nothing and records what the
    loop tells it."""

    def __init__(self, *, reads_attention: bool = False, normalised: bool = False) -> None:
        self.reads_attention, self.normalised = reads_attention, normalised
        self.started: list[tuple[int, int]] = []
        self.calls: list[str] = []
        self.attention: list[Sequence[torch.Tensor] | None] = []
        self.sentence: list[int] = []  # the sentence of each row now
        self.sentences: list[list[int]] = []  # ... after each reorder
        self.masked: list[torch.Tensor] = []  # copies of what mask was given

    def start(self, batch: int, vocab: int) -> None:
        self.started.append((batch, vocab))
        self.sentence = list(range(batch))

    def mask(self, scores: torch.Tensor) -> None:
        assert scores.shape == (len(self.sentence), V)
        self.masked.append(scores.clone())
        self.calls.append("mask")

    def charge(self, log_probs: torch.Tensor, attention: Sequence[torch.Tensor] | None) -> None:
        assert log_probs.shape == (len(self.sentence), V)
        self.attention.append(attention)
        self.calls.append("charge")

    def reorder(self, rows: torch.Tensor | None, tokens: torch.Tensor | None) -> None:
        if rows is not None:
            assert int(rows.max()) < len(self.sentence)
            self.sentence = [self.sentence[r] for r in rows.tolist()]
        if tokens is not None:
            assert tokens.shape == (len(self.sentence),)
        self.sentences.append(list(self.sentence))
        self.calls.append("reorder" if tokens is not None else "first rows")


def test_the_loop_starts_and_reorders_constraints_and_terms_as_the_cache() -> None:
    # greedy: one row per sentence; the terms are started (checked) but never called
    constraint, term = _Recorder(), _Recorder()
    cfg = DecodeConfig(method="greedy")
    generate(Attending(), src(3), cfg, constraints=[constraint], terms=[term])
    assert constraint.started == term.started == [(3, V)]
    assert constraint.calls[:3] == ["first rows", "mask", "reorder"]
    assert constraint.sentences[0] == [0, 1, 2] and term.calls == []
    # beam search: K consecutive rows per sentence; each step masks, then charges
    constraint, term = _Recorder(), _Recorder()
    cfg = DecodeConfig(method="beam", beam_size=2)
    generate(Attending(), src(3), cfg, constraints=[constraint], terms=[term])
    for part in (constraint, term):
        assert part.started == [(3, V)]
        assert part.sentences[0] == [0, 0, 1, 1, 2, 2]  # the strategy's first rows
        # the rows stay K consecutive ones per live sentence, in the sentences' order
        assert all(s == sorted(s) and len(s) % 2 == 0 for s in part.sentences)
    assert constraint.calls[:3] == ["first rows", "mask", "reorder"]
    assert term.calls[:3] == ["first rows", "charge", "reorder"]
    assert constraint.calls.count("reorder") == term.calls.count("reorder") >= 1


def test_a_constraint_that_masks_after_normalisation_masks_without_renormalising() -> None:
    # the scores it is given: the logits, then the log-probs, of the same rows
    seen = _Recorder(normalised=True)
    greedy = DecodeConfig(method="greedy")
    generate(ScriptedModel(), src(2), greedy, constraints=[seen])
    logits, log_probs = seen.masked[:2]
    assert torch.allclose(log_probs, torch.log_softmax(logits, dim=-1))

    class _NoB(_Recorder):
        def mask(self, scores: torch.Tensor) -> None:
            scores[:, B] = float("-inf")

    # B (0.4) masked after normalisation: A keeps its 0.6, it is not renormalised to 1
    for normalised, first in ((True, math.log(0.6)), (False, 0.0)):
        cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=1)
        (best,) = generate(ScriptedModel(), src(), cfg, constraints=[_NoB(normalised=normalised)])[
            0
        ]
        assert best.tokens == [A] and best.log_prob == pytest.approx(first)


def test_only_a_term_that_reads_attention_is_given_it() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2)
    blind, model = _Recorder(), Attending()
    plain = generate(model, src(), cfg)
    assert generate(model, src(), cfg, terms=[blind]) == plain
    assert model.asked == 0 and blind.attention and all(a is None for a in blind.attention)
    reader, model = _Recorder(reads_attention=True), Attending()
    assert generate(model, src(), cfg, terms=[blind, reader]) == plain  # charges nothing
    assert model.asked == len(reader.attention) > 0
    for attention in reader.attention:  # every layer's (N,H,1,S), given to both
        assert attention is not None and len(attention) == 2
        assert all(a.shape[1:] == (2, 1, 3) for a in attention)


def test_what_a_constraint_or_a_term_refuses_is_refused_before_decoding() -> None:
    class _SmallVocab(Constraint, Term):
        def start(self, batch: int, vocab: int) -> None:
            if vocab > 5:
                raise ValueError("too many tokens")

    model = Attending()
    for kw in ({"constraints": [_SmallVocab()]}, {"terms": [_SmallVocab()]}):
        for method in ("greedy", "beam"):
            with pytest.raises(ValueError, match="too many tokens"):
                generate(model, src(), DecodeConfig(method=method), **kw)  # type: ignore[arg-type]
    assert model.asked == 0


def test_the_tiny_models_vocabulary_is_what_the_loop_checks_against() -> None:
    model, ids = tiny_model(), tiny_batch()

    class _Tiny(_Recorder):
        def mask(self, scores: torch.Tensor) -> None:
            assert scores.shape == (len(self.sentence), TINY_TGT_VOCAB)

    tiny = _Tiny()
    out = generate(model, ids, DecodeConfig(method="beam", beam_size=3), constraints=[tiny])
    assert tiny.started == [(5, TINY_TGT_VOCAB)]
    assert tiny.sentences[0] == [s for s in range(5) for _ in range(3)]
    assert out == generate(model, ids, DecodeConfig(method="beam", beam_size=3))


# ---------------------------------------------------------------------------- top_k
@pytest.mark.parametrize(
    ("rows", "cols", "k"),
    [(3, 24001, 8), (2, 4 * 24001, 8), (4, 24001, 1), (5, 64 * TOP_K_BLOCK, 3), (2, 100, 8)],
)
def test_top_k_is_torch_topk(rows: int, cols: int, k: int) -> None:
    gen = torch.Generator().manual_seed(rows * cols + k)
    x = torch.randn(rows, cols, generator=gen)
    x[0, : cols // 2] = float("-inf")  # a row half masked, as constraints leave them
    x[-1, -1] = 50.0  # the largest value in the last, partial block
    values, indices = top_k(x, k)
    want = x.topk(k, dim=1)
    assert torch.equal(values, want.values)
    assert torch.equal(indices, want.indices)


def test_top_k_of_a_row_with_fewer_finite_values_than_k_returns_all_of_them_first() -> None:
    x = torch.full((2, 24001), float("-inf"))
    x[0, [7, 20000]] = torch.tensor([0.5, 1.5])  # two allowed pieces, as a constraint leaves
    x[1, 24000] = -2.0
    values, indices = top_k(x, 8)
    assert values[0, :2].tolist() == [1.5, 0.5] and indices[0, :2].tolist() == [20000, 7]
    assert values[1, 0] == -2.0 and indices[1, 0] == 24000
    assert torch.isinf(values[:, 2:]).all() and torch.isinf(values[1, 1:]).all()


def test_top_k_with_ties_returns_the_tied_values_at_their_own_columns() -> None:
    x = torch.zeros(2, 24001)
    x[0, [5, 9000, 24000]] = 1.0
    x[1, :] = -1.0
    values, indices = top_k(x, 4)
    assert torch.equal(values, x.topk(4, dim=1).values)
    assert torch.equal(x.gather(1, indices), values)
    assert set(indices[0, :3].tolist()) == {5, 9000, 24000}
    assert len(set(indices[1].tolist())) == 4  # four distinct columns, not one four times
