"""Ranking terms of beam search (attenzione.search.terms): symbol coverage, attention coverage and
the word check change how hypotheses are ranked, never their log-prob, and greedy decoding
and sampling ignore them — on scripted stubs."""

from __future__ import annotations

import math

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.search.decoding import Term, generate
from attenzione.search.lexicon import Lexicon, piece_table
from attenzione.search.terms import AttentionCoverage, SymbolCoverage, WordPenalty
from decoding_stubs import EOS, PAD, A, Attending, B, C, ScriptedModel, V, src


def _table(*columns: int) -> torch.Tensor:
    """(V, len(columns)): column c counts token ``columns[c]`` (one each time it is written)."""
    table = torch.zeros(V, len(columns), dtype=torch.long)
    for c, tok in enumerate(columns):
        table[tok, c] = 1
    return table


def _needs_c(*needs: int, weight: float | torch.Tensor = 10.0) -> SymbolCoverage:
    """Coverage of one symbol, written only by the stub's token C; ``needs[b]`` per sentence."""
    need = torch.tensor([[n] for n in needs], dtype=torch.long)
    return SymbolCoverage(need, _table(C), weight)


def test_coverage_ranks_down_what_owes_and_keeps_the_model_scores() -> None:
    # without coverage B·eos (0.36) beats A·eos (0.30) and A·C·eos (0.24); needing C, the
    # best is A·C, and a hypothesis that owes C keeps its log-prob but loses score
    w = 10.0
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    hyps = generate(ScriptedModel(), src(), cfg, terms=[_needs_c(1, weight=w)])[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert hyps[0].score == pytest.approx(math.log(0.24))
    assert hyps[1].score == pytest.approx(math.log(0.36) - w)
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36)])
    # a weak push changes nothing: 0.36 still beats 0.24 by more than 0.1
    weak = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0)
    best = generate(ScriptedModel(), src(), weak, terms=[_needs_c(1, weight=0.1)])[0][0]
    assert best.tokens == [B]


def test_the_coverage_charge_is_in_the_length_normalised_score() -> None:
    # at length penalty 1 the charge is per owed symbol on the mean log-prob per token
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=1.0)
    hyps = generate(ScriptedModel(), src(), cfg, terms=[_needs_c(1, weight=0.5)])[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert [h.score for h in hyps] == pytest.approx([math.log(0.24) / 3, math.log(0.36) / 2 - 0.5])


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="sample", top_k=1)],
    ids=["greedy", "sample"],
)
def test_coverage_is_ignored_by_greedy_decoding_and_sampling(cfg: DecodeConfig) -> None:
    # greedy has no other hypothesis to choose: pushing it would only make it write on
    plain = generate(ScriptedModel(), src(), cfg)[0][0]
    pushed = generate(ScriptedModel(), src(), cfg, terms=[_needs_c(1)])[0][0]
    assert pushed == plain
    assert plain.tokens == [A]


def test_a_coverage_owing_nothing_changes_nothing() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    plain = generate(ScriptedModel(), src(), cfg)[0]
    assert [h.tokens for h in plain] == [[B], [A]]
    assert generate(ScriptedModel(), src(), cfg, terms=[_needs_c(0)])[0] == plain


def test_coverage_weights_charge_each_column_its_own_amount() -> None:
    # two symbols, both written by C: each column owed costs its own weight, whether the
    # weights are one term's (C,) tensor or two terms of one column each
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    table = _table(C, C)

    def best_two(terms: list[Term]) -> list[tuple[list[int], float, float]]:
        hyps = generate(ScriptedModel(), src(), cfg, terms=terms)[0]
        return [(h.tokens, h.score, h.log_prob) for h in hyps]

    for need, charge in (([1, 0], 10.0), ([0, 1], 3.0), ([1, 1], 13.0)):
        weighed = SymbolCoverage(torch.tensor([need]), table, torch.tensor([10.0, 3.0]))
        split = [
            SymbolCoverage(torch.tensor([[need[0]]]), table[:, :1], 10.0),
            SymbolCoverage(torch.tensor([[need[1]]]), table[:, 1:], 3.0),
        ]
        hyps = best_two([weighed])
        assert hyps == best_two(split)
        assert [h[0] for h in hyps] == [[A, C], [B]]
        assert hyps[1][1] == pytest.approx(math.log(0.36) - charge)
        assert [h[2] for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36)])


def test_a_symbol_owed_twice_is_charged_twice() -> None:
    # the source has two of C's symbol: B·<eos> owes both, A·C·<eos> still owes one, and
    # neither stops the search: A·C·<eos> wins (0.24·e^-1 > 0.36·e^-2)
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    hyps = generate(ScriptedModel(), src(), cfg, terms=[_needs_c(2, weight=1.0)])[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert [h.score for h in hyps] == pytest.approx([math.log(0.24) - 1.0, math.log(0.36) - 2.0])


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (torch.tensor([1.0, 1.0]), "weight needs shape"),
        (torch.tensor([-1.0]), "finite and >= 0"),
        (torch.tensor([float("nan")]), "finite and >= 0"),
        (torch.tensor([float("inf")]), "finite and >= 0"),
        (-1.0, "finite and >= 0"),
        (float("nan"), "finite and >= 0"),
    ],
)
def test_malformed_coverage_weights_are_refused(weight: torch.Tensor | float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate(ScriptedModel(), src(), terms=[_needs_c(1, weight=weight)])


def test_a_malformed_coverage_is_refused() -> None:
    with pytest.raises(ValueError, match="shapes"):
        generate(ScriptedModel(), src(2), terms=[_needs_c(1)])
    with pytest.raises(ValueError, match="shapes"):
        generate(
            ScriptedModel(),
            src(),
            terms=[SymbolCoverage(torch.ones(1, 1).long(), _table(C)[:5], 1.0)],
        )
    bad = SymbolCoverage(torch.ones(1, 1), torch.ones(V, 1), 1.0)
    with pytest.raises(ValueError, match="integer"):
        generate(ScriptedModel(), src(), terms=[bad])
    # refused whatever the method, though greedy decoding would not use it
    with pytest.raises(ValueError, match="shapes"):
        generate(ScriptedModel(), src(2), DecodeConfig(method="greedy"), terms=[_needs_c(1)])


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
    cfg = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0)
    out = generate(_Swapping(), src(2), cfg, terms=[_needs_c(1, 0)])
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
    cfg = DecodeConfig(method="beam", beam_size=2, length_penalty=0.0)
    out = generate(_LateChoice(), src(3), cfg, terms=[_needs_c(1, 0, 1)])
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
    cfg = DecodeConfig(method="beam", beam_size=beam)
    best = generate(_Babbling(), src(), cfg, terms=[_needs_c(1, weight=4.0)])[0][0]
    assert best.tokens == [A]
    assert best.log_prob == pytest.approx(math.log(0.7))


class _NeverEnding(ScriptedModel):
    """After A: end (0.7) or start writing B, and once B is written, never end."""

    def next_dist(self, prefix: list[int]) -> dict[int, float]:
        return {A: 1.0} if not prefix else {B: 1.0} if B in prefix else {EOS: 0.7, B: 0.3}


def test_a_hypothesis_cut_at_the_cap_never_beats_one_that_ended() -> None:
    # B is the owed symbol; only hypotheses that never end write it. Cut at the cap they owe
    # nothing and would outrank A·<eos>; but with K = 1 the search went on past A·<eos> only
    # for the coverage, so what it cut at the cap is not returned
    need_b = SymbolCoverage(torch.tensor([[1]]), _table(B), 4.0)
    cfg = DecodeConfig(method="beam", beam_size=1)
    assert generate(_NeverEnding(), src(), cfg, terms=[need_b])[0][0].tokens == [A]


def test_a_term_serves_a_second_search_as_it_did_the_first() -> None:
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    coverage = _needs_c(1, 0)
    first = generate(_Swapping(), src(2), cfg, terms=[coverage])
    assert generate(_Swapping(), src(2), cfg, terms=[coverage]) == first
    attention = AttentionCoverage(torch.tensor([[A, A, EOS]]), 1, 1.0, PAD, EOS)
    first = generate(Attending(), torch.tensor([[A, A, EOS]]), cfg, terms=[attention])
    assert generate(Attending(), torch.tensor([[A, A, EOS]]), cfg, terms=[attention]) == first


# ---------------------------------------------------------------- attention coverage
SRC = torch.tensor([[A, A, EOS]])


def _covered(*received: float) -> float:
    return sum(math.log(min(max(r, 1e-6), 1.0)) for r in received)


def _attention(beta: float, layer: int = 1, ids: torch.Tensor = SRC) -> AttentionCoverage:
    return AttentionCoverage(ids, layer, beta, PAD, EOS)


def test_attention_coverage_ranks_down_what_left_its_source_unattended() -> None:
    plain = DecodeConfig(method="beam", beam_size=3, n_best=3, length_penalty=0.0)
    assert generate(Attending(), SRC, plain)[0][0].tokens == [B]  # the model's own choice
    # the <eos> position's attention is not counted; B·<eos> never attended to token 2
    model_and_cover = {
        (B,): (math.log(0.36), _covered(2.0, 0.0)),
        (A,): (math.log(0.30), _covered(1.0, 0.5)),
        (A, C): (math.log(0.24), _covered(1.0, 1.0)),
    }
    cfg = DecodeConfig(method="beam", beam_size=4, n_best=4, length_penalty=0.0)
    for beta, best in ((0.02, [A]), (1.0, [A, C])):
        model = Attending()
        hyps = {tuple(h.tokens): h for h in generate(model, SRC, cfg, terms=[_attention(beta)])[0]}
        assert list(hyps)[0] == tuple(best)
        assert model.asked > 0
        assert {(A,), (A, C)} <= set(hyps) and ((B,) in hyps) == (beta < 1)
        for tokens, (log_prob, cover) in model_and_cover.items():
            if tokens not in hyps:
                continue  # B·<eos>, at the strong push: ranked below the 4 kept
            assert hyps[tokens].score == pytest.approx(log_prob + beta * cover), tokens
            assert hyps[tokens].log_prob == pytest.approx(log_prob)  # the model's own
    # layer 0 spreads its attention evenly: every hypothesis covers less, A·C still most
    far = DecodeConfig(method="beam", beam_size=3, n_best=3, length_penalty=0.0)
    out = generate(Attending(), SRC, far, terms=[_attention(1.0, layer=0)])[0]
    scores = {tuple(h.tokens): h.score for h in out}
    assert scores[(A,)] == pytest.approx(math.log(0.30) + _covered(2 / 3, 2 / 3))


def test_attention_coverage_ignores_padding() -> None:
    # the same source padded: the padding is no token to cover, and the scores are the same
    padded = torch.tensor([[A, A, EOS, PAD]])

    class _Padded(Attending):
        def decode(self, tgt_ids, cache, need_weights=False):  # type: ignore[no-untyped-def]
            out = super().decode(tgt_ids, cache, need_weights)
            if need_weights:  # nothing attends to the padding
                out.cross_attentions = [
                    torch.cat([a, torch.zeros_like(a[..., :1])], dim=-1)
                    for a in out.cross_attentions
                ]
            return out

    cfg = DecodeConfig(method="beam", beam_size=4, n_best=4, length_penalty=0.0)
    plain = generate(Attending(), SRC, cfg, terms=[_attention(1.0)])
    assert generate(_Padded(), padded, cfg, terms=[_attention(1.0, ids=padded)]) == plain


class _SwappingAttention(Attending):
    """_Swapping's table (the two beams trade rows at step 1), with attention that differs by
    beam: after C the second token gets all of it, after A a tenth."""

    TABLE = _Swapping.TABLE
    ATTN = {(): [1.0, 0.0, 0.0], (C,): [0.0, 1.0, 0.0], (A,): [0.0, 0.1, 0.9]}


def test_attention_coverage_follows_each_beam_through_reordering() -> None:
    # at step 1 A·B (0.405) overtakes C·B (0.33) and the rows swap; the attention each has
    # received must swap with them. The last step attends a third to each token.
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    out = generate(_SwappingAttention(), SRC, cfg, terms=[_attention(1.0)])[0]
    hyps = {tuple(h.tokens): h.score for h in out}
    assert list(hyps) == [(C, B), (A, B)]
    assert hyps[(C, B)] == pytest.approx(math.log(0.55 * 0.6) + _covered(1 + 1 / 3, 1 + 1 / 3))
    assert hyps[(A, B)] == pytest.approx(math.log(0.45 * 0.9) + _covered(1 + 1 / 3, 0.1 + 1 / 3))


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="sample", top_k=1)],
    ids=["greedy", "sample"],
)
def test_attention_coverage_is_ignored_by_greedy_decoding_and_sampling(cfg: DecodeConfig) -> None:
    model = Attending()
    assert generate(model, SRC, cfg, terms=[_attention(1.0)]) == generate(ScriptedModel(), SRC, cfg)
    assert model.asked == 0  # the weights are not even computed


def test_attention_coverage_needs_a_decoder_layer_and_a_weight() -> None:
    beam = DecodeConfig(method="beam", beam_size=3)
    for layer in (2, -1):
        with pytest.raises(ValueError, match="decoder layer"):
            generate(Attending(), SRC, beam, terms=[_attention(1.0, layer=layer)])
    for beta in (float("nan"), -1.0, float("inf")):
        with pytest.raises(ValueError, match="finite and >= 0"):
            _attention(beta)


def test_coverage_terms_add_up() -> None:
    # needing C (1 per owed symbol) and attention coverage: each finished hypothesis pays
    # both, and each term alone would pay its own
    cfg = DecodeConfig(method="beam", beam_size=4, n_best=4, length_penalty=0.0)
    out = generate(Attending(), SRC, cfg, terms=[_needs_c(1, weight=1.0), _attention(0.02)])[0]
    scores = {tuple(h.tokens): h.score for h in out}
    assert scores[(A, C)] == pytest.approx(math.log(0.24) + 0.02 * _covered(1.0, 1.0))
    assert scores[(A,)] == pytest.approx(math.log(0.30) - 1.0 + 0.02 * _covered(1.0, 0.5))
    assert scores[(B,)] == pytest.approx(math.log(0.36) - 1.0 + 0.02 * _covered(2.0, 0.0))
    assert list(scores)[0] == (A, C)


# ---------------------------------------------------------------- the word check
# the stub's tokens as pieces: A = "▁gatt", B = "▁gappo", C = "o"; the known word is "gatto"
PIECES = ["<pad>", "<s>", "</s>", "\u2581gatt", "\u2581gappo", "o"]


def _lexicon(*sources: set[str], penalty: float = 8.0) -> Lexicon:
    texts, starts = piece_table(PIECES, EOS)
    return Lexicon(["gatto"], texts, starts, [frozenset(s) for s in sources], penalty)


def _words(*sources: set[str], penalty: float = 8.0, beam: int = 2) -> WordPenalty:
    return WordPenalty(_lexicon(*sources, penalty=penalty), 2 * beam, torch.device("cpu"))


def test_the_word_check_ranks_down_invented_words_and_keeps_the_model_scores() -> None:
    # "gappo" is invented (charged as it is chosen), "gatt" is not a word (charged at its
    # end); "gatt"+"o" = "gatto" is known
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2, length_penalty=0.0)
    assert [h.tokens for h in generate(ScriptedModel(), src(), cfg)[0]] == [[B], [A]]
    hyps = generate(ScriptedModel(), src(), cfg, terms=[_words(set())])[0]
    assert [h.tokens for h in hyps] == [[A, C], [B]]
    assert [h.score for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36) - 8.0])
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(0.24), math.log(0.36)])
    # a word of the sentence's own source is known for that sentence only
    out = generate(ScriptedModel(), src(2), cfg, terms=[_words({"gappo"}, set())])
    assert [h[0].tokens for h in out] == [[B], [A, C]]


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="sample", seed=1)],
    ids=["greedy", "sample"],
)
def test_the_word_check_is_ignored_by_greedy_decoding_and_sampling(cfg: DecodeConfig) -> None:
    plain = generate(ScriptedModel(), src(3), cfg)
    assert generate(ScriptedModel(), src(3), cfg, terms=[_words(set(), set(), set())]) == plain


def test_a_word_check_for_another_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="the lexicon needs 2 sources"):
        generate(ScriptedModel(), src(2), terms=[_words(set())])
