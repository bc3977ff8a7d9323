"""Hard constraints of decoding (attenzione.search.constraints): byte bans, well-formed UTF-8 and
whole characters, which hold for every method — on a scripted stub and on a real tiny model."""

from __future__ import annotations

import math

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.search.constraints import (
    CONTINUATION,
    NEVER,
    NOT_A_BYTE,
    ByteBan,
    NoDoubledMarks,
    WellFormedUTF8,
    WholeCharacters,
    utf8_roles,
)
from attenzione.search.decoding import generate
from decoding_stubs import (
    EOS,
    TINY_TGT_VOCAB,
    A,
    B,
    C,
    ScriptedModel,
    V,
    src,
    tiny_batch,
    tiny_model,
)


def _tokens(out: list) -> list[list[list[int]]]:
    return [[h.tokens for h in hyps] for hyps in out]


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
    model = tiny_model()
    ids = tiny_batch()
    free = generate(model, ids, cfg)
    # ban, in each sentence, every token its unconstrained output used (never <eos>)
    banned = torch.zeros(ids.shape[0], TINY_TGT_VOCAB, dtype=torch.bool)
    for row, hyps in enumerate(free):
        for h in hyps:
            banned[row, h.tokens] = True
    assert banned.any()
    ban = ByteBan(banned, EOS)
    out = generate(model, ids, cfg, constraints=[ban])
    for row, hyps in enumerate(out):
        assert hyps
        for h in hyps:
            assert not banned[row, h.tokens].any(), (row, h.tokens)
    # the same object serves a second search as it did the first
    assert _tokens(generate(model, ids, cfg, constraints=[ban])) == _tokens(out)
    # nothing banned: exactly the unconstrained decoding
    none = generate(model, ids, cfg, constraints=[ByteBan(torch.zeros_like(banned), EOS)])
    assert _tokens(none) == _tokens(free)


def test_a_ban_renormalises_the_choice_over_what_is_left() -> None:
    # the stub's greedy choice is A (0.6); with A banned B takes all the probability
    banned = torch.zeros(2, V, dtype=torch.bool)
    banned[0, A] = True  # the first sentence only
    out = generate(
        ScriptedModel(), src(2), DecodeConfig(method="greedy"), constraints=[ByteBan(banned, EOS)]
    )
    assert _tokens(out) == [[[B]], [[A]]]
    assert out[0][0].log_prob == pytest.approx(math.log(1.0 * 0.9))
    assert out[1][0].log_prob == pytest.approx(math.log(0.6 * 0.5))


def test_a_malformed_ban_is_refused() -> None:
    model, ids = tiny_model(), tiny_batch()
    with pytest.raises(ValueError, match="shape"):
        generate(model, ids, constraints=[ByteBan(torch.zeros(2, 29, dtype=torch.bool), EOS)])
    with pytest.raises(ValueError, match="shape"):
        ban = ByteBan(torch.zeros(ids.shape[0], 29, dtype=torch.long), EOS)
        generate(model, ids, constraints=[ban])
    eos = torch.zeros(ids.shape[0], 29, dtype=torch.bool)
    eos[:, EOS] = True
    with pytest.raises(ValueError, match="<eos>"):
        ByteBan(eos, EOS)


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
    assert (NOT_A_BYTE, CONTINUATION, NEVER) == (0, -1, -2)


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
    free = generate(_BrokenBytes(), src(2), cfg)
    if cfg.method != "sample":  # the model's own choice is broken (a sample may not be)
        assert not all(_well_formed(h.tokens) for s in free for h in s)
    out = generate(_BrokenBytes(), src(2), cfg, constraints=[WellFormedUTF8(ROLES)])
    for hyps in out:
        assert hyps and all(_well_formed(h.tokens) for h in hyps), hyps
    if cfg.method == "greedy":
        # the choice is renormalised over what is allowed: A is 0.4 of the 0.5 left
        assert out[0][0].tokens == [A, B]
        assert out[0][0].log_prob == pytest.approx(math.log(0.8))


def test_a_row_whose_continuations_are_all_banned_is_left_to_the_model() -> None:
    banned = torch.zeros(1, V, dtype=torch.bool)
    banned[0, B] = True  # no continuation may be written: the guard cannot hold, nor empty
    both = [ByteBan(banned, EOS), WellFormedUTF8(ROLES)]
    out = generate(_BrokenBytes(), src(), DecodeConfig(method="greedy"), constraints=both)
    assert out[0][0].tokens == [A, C]
    with pytest.raises(ValueError, match="one role per target token"):
        generate(_BrokenBytes(), src(), constraints=[WellFormedUTF8(ROLES[:5])])


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
LE = "\u2264".encode()  # "≤" = E2 89 A4


@pytest.mark.parametrize(
    "cfg",
    [DecodeConfig(method="greedy"), DecodeConfig(method="beam", beam_size=3, n_best=3)],
    ids=["greedy", "beam"],
)
def test_byte_pieces_spell_only_the_sources_characters(cfg: DecodeConfig) -> None:
    assert bytes([0xE2, 0x89, 0xA4]) == LE
    free = generate(_SwappedBytes(), src(2), cfg, constraints=[WellFormedUTF8(ROLES_3)])
    assert free[0][0].tokens == [A, C, B]  # well-formed UTF-8, but "⊉"
    whole = WholeCharacters(BYTE_OF, [frozenset({LE}), frozenset()])
    utf8 = [WellFormedUTF8(ROLES_3), whole]
    out = generate(_SwappedBytes(), src(2), cfg, constraints=utf8)
    assert out[0][0].tokens == [A, B, C]  # only "≤" can be spelled
    assert not any(h.tokens[:2] == [A, C] for h in out[0])
    # the bytes keep the model's probabilities (the UTF-8 check's, over the continuation
    # bytes), not renormalised over the one byte left: finishing a character is not free
    assert out[0][0].log_prob == pytest.approx(math.log(0.4 * 0.4))
    # the second sentence has no character to spell: left to the UTF-8 check alone
    assert out[1][0].tokens == free[1][0].tokens
    # the same constraint serves a second search as it did the first
    assert _tokens(generate(_SwappedBytes(), src(2), cfg, constraints=utf8)) == _tokens(out)
    # a constraint of its own: it counts the bytes a character owes without the UTF-8 check
    alone = generate(_SwappedBytes(), src(2), cfg, constraints=[whole])
    assert alone[0][0].tokens == [A, B, C]
    assert alone[0][0].log_prob == pytest.approx(math.log(0.4 * 0.4))


def test_whole_characters_follow_their_sentence_through_beams() -> None:
    # three sentences, only the middle one's source has "≤": the others spell "⊉" as the
    # model likes, whatever rows beam search gives each
    cfg = DecodeConfig(method="beam", beam_size=2, n_best=2)
    chars = [frozenset(), frozenset({LE}), frozenset()]
    utf8 = [WellFormedUTF8(ROLES_3), WholeCharacters(BYTE_OF, chars)]
    out = generate(_SwappedBytes(), src(3), cfg, constraints=utf8)
    free = generate(_SwappedBytes(), src(3), cfg, constraints=[WellFormedUTF8(ROLES_3)])
    assert out[0] == free[0] and out[2] == free[2]
    assert free[0][0].tokens == [A, C, B]
    assert out[1][0].tokens == [A, B, C]  # the only character it may spell
    assert out[1][0].log_prob == pytest.approx(math.log(0.4 * 0.4))
    assert not any(h.tokens[:2] == [A, C] for h in out[1])


def test_malformed_whole_characters_are_refused() -> None:
    le_only = [frozenset({LE}), frozenset()]
    with pytest.raises(ValueError, match="the byte of each of 6 target tokens"):
        short = WholeCharacters(BYTE_OF[:5], le_only)
        generate(_SwappedBytes(), src(2), constraints=[WellFormedUTF8(ROLES_3), short])
    with pytest.raises(ValueError, match="the characters of 3 sources"):
        two = WholeCharacters(BYTE_OF, le_only)
        generate(_SwappedBytes(), src(3), constraints=[WellFormedUTF8(ROLES_3), two])


class _Doubling(ScriptedModel):
    """After A (a full stop, say) the model likes a second one: A A (0.42) beats A <eos>."""

    TABLE = {(): {A: 0.6, B: 0.4}, (A,): {A: 0.7, EOS: 0.3}, (A, A): {EOS: 1.0}}


def test_a_mark_is_doubled_only_where_its_source_doubles_it() -> None:
    writes = torch.zeros(1, V, dtype=torch.bool)
    writes[0, A] = True  # A writes the one mark
    doubled = torch.tensor([[False], [True]])  # the second source has it twice in a row
    for cfg in (DecodeConfig(method="greedy"), DecodeConfig(beam_size=2, n_best=2)):
        out = generate(_Doubling(), src(2), cfg, constraints=[NoDoubledMarks(writes, doubled)])
        first, second = _tokens(out)
        assert all(t[-2:] != [A, A] for t in first), first
        assert second[0] == [A, A], second
    # the same search without the constraint doubles the mark in both
    free = generate(_Doubling(), src(2), DecodeConfig(method="greedy"))
    assert _tokens(free) == [[[A, A]], [[A, A]]]


def test_the_shipped_models_read_which_marks_to_keep_single() -> None:
    """The shipped en→it model: "on the sofa." had "sul divano.." among its five best."""
    from attenzione.config import search_config
    from attenzione.translator import Translator
    from attenzione.translator.model_dir import PRETRAINED_DIR

    if not (PRETRAINED_DIR / "model.safetensors").is_file():
        pytest.skip("no shipped model in this checkout")
    tr = Translator.from_pretrained()
    (out,) = tr.translate("The cat is sleeping on the sofa.", search=search_config(5, 5))
    assert len(out.candidates) == 5
    assert not any(".." in c.text for c in out.candidates), [c.text for c in out.candidates]
