"""Known words: the word list, the check of a (partial) word, and beam search that ranks
invented words down — on a scripted stub, on a model directory and on the shipped model."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.search.decoding import generate
from attenzione.search.lexicon import (
    Charge,
    Lexicon,
    known_starts,
    piece_table,
    translated_words,
    word_list,
    words_of,
)
from attenzione.search.registry import Terms
from attenzione.search.terms import WordPenalty
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator

# a target vocabulary: "▁ga" starts a word; "tto", "ppo" and "tt" continue it; "▁Dvo",
# <0xC5><0x99> ("ř") and "ák" spell the name Dvořák
PIECES = [
    "<pad>",
    "<s>",
    "</s>",
    "▁ga",
    "tto",
    "ppo",
    "tt",
    "▁è",
    "<0xC5>",
    "<0x99>",
    "▁Dvo",
    "ák",
    "▁Do",
    "▁",  # a lone word mark: begins a word spelled in pieces that are not starts ("▁" "2")
]
PAD, BOS, EOS, GA, TTO, PPO, TT, E, B1, B2, DVO, AK, DO, SP = range(len(PIECES))
V = len(PIECES)
KNOWN = ["gatto", "è"]


def _lexicon(*sources: set[str], penalty: float = 8.0) -> Lexicon:
    texts, starts = piece_table(PIECES, EOS)
    return Lexicon(KNOWN, texts, starts, [frozenset(s) for s in sources], penalty)


def _checked(*sources: set[str], penalty: float = 8.0, beam: int = 3) -> list[WordPenalty]:
    """The word check as beam search takes it: one ranking term, looking at each row's 2K
    likeliest pieces."""
    return [WordPenalty(_lexicon(*sources, penalty=penalty), 2 * beam, torch.device("cpu"))]


def test_words_are_lowercased_letter_runs() -> None:
    assert words_of("Dell'Università, 2017: l'8% è") == ["dell", "università", "l", "è"]
    assert word_list(["Il gatto.", "il Cane", "GATTO 3"]) == ["cane", "gatto", "il"]


def test_piece_table_marks_word_starts_and_writes_no_specials() -> None:
    texts, starts = piece_table(PIECES, EOS)
    assert texts[:8] == [b"", b"", b"", b"ga", b"tto", b"ppo", b"tt", "è".encode()]
    assert texts[B1 : B2 + 1] == [b"\xc5", b"\x99"]  # a byte piece writes its byte
    assert [i for i, s in enumerate(starts.tolist()) if s] == [EOS, GA, E, DVO, DO, SP]
    assert texts[SP] == b""


def test_known_starts_are_the_word_starts_that_begin_a_known_word() -> None:
    texts, starts = piece_table(PIECES, EOS)
    free = known_starts(KNOWN, texts, starts)
    # "▁ga" and "▁è" begin known words; <eos> and a lone "▁" write no letters; "▁Dvo" and
    # "▁Do" begin no known word (a source may still make them free); "tto" is no word start
    assert {i for i in range(V) if free[i]} == {GA, E, EOS, SP}


def test_fits_whole_words_and_starts_of_words() -> None:
    lex = _lexicon({"raonic"})
    assert lex.fits(0, "gatto", whole=True)
    assert lex.fits(0, "Gatto,", whole=True)  # case and punctuation do not matter
    assert lex.fits(0, "gatt", whole=False)  # can still become "gatto"
    assert not lex.fits(0, "gatt", whole=True)  # but is not a word
    assert not lex.fits(0, "gappo", whole=False)  # no known word starts so
    assert lex.fits(0, "Raonic", whole=True)  # the source's words count as known
    assert not lex.fits(0, "Raonica", whole=False)
    assert lex.fits(0, "è,", whole=False)  # after punctuation the word is whole
    assert not lex.fits(0, "gatt,", whole=False)
    assert lex.fits(0, "", whole=True) and lex.fits(0, "2017", whole=True)  # no letters


@dataclass
class _Cache:
    prefixes: list[list[int]]

    def reorder(self, indices: torch.Tensor) -> _Cache:
        self.prefixes = [list(self.prefixes[i]) for i in indices.tolist()]
        return self


class _Speller:
    """p(next | prefix) from a table: after "▁ga" the model prefers the invented "gappo"
    (0.6) to "gatto" (0.3), and to "gatt" + <eos> (0.1)."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {GA: 1.0},
        (GA,): {PPO: 0.6, TTO: 0.3, TT: 0.1},
    }

    def __init__(self) -> None:
        self.config = SimpleNamespace(
            pad_id=PAD, bos_id=BOS, eos_id=EOS, max_len=20, tgt_vocab_size=V
        )

    def encode(self, src_ids: torch.Tensor) -> SimpleNamespace:
        b = src_ids.shape[0]
        return SimpleNamespace(memory=torch.zeros(b, 1, 1), memory_mask=torch.ones(b, 1, 1, 1))

    def init_cache(self, memory: torch.Tensor, memory_mask: torch.Tensor, capacity: int) -> _Cache:
        return _Cache([[] for _ in range(memory.shape[0])])

    def decode(self, tgt_ids: torch.Tensor, cache: _Cache) -> SimpleNamespace:
        rows = []
        for r, tok in enumerate(tgt_ids[:, -1].tolist()):
            if tok != BOS:
                cache.prefixes[r].append(tok)
            logp = torch.full((V,), -1e9)
            for t, p in self.TABLE.get(tuple(cache.prefixes[r]), {EOS: 1.0}).items():
                logp[t] = math.log(p)
            rows.append(logp)
        return SimpleNamespace(logits=torch.stack(rows)[:, None, :])


def _src(batch: int = 1) -> torch.Tensor:
    return torch.full((batch, 3), 3, dtype=torch.long)


BEAM = DecodeConfig(method="beam", beam_size=3, n_best=3, length_penalty=0.0)


def test_an_invented_word_is_ranked_down_and_log_probs_stay_the_models() -> None:
    plain = generate(_Speller(), _src(), BEAM)[0]
    assert plain[0].tokens == [GA, PPO]  # the model's own choice: "gappo"
    hyps = generate(_Speller(), _src(), BEAM, terms=_checked(set(), penalty=8.0))[0]
    assert [h.tokens for h in hyps] == [[GA, TTO], [GA, PPO], [GA, TT]]
    # "gappo" pays once, at the piece that made it impossible; "gatt" at its end
    assert [h.score for h in hyps] == pytest.approx(
        [math.log(0.3), math.log(0.6) - 8.0, math.log(0.1) - 8.0]
    )
    assert [h.log_prob for h in hyps] == pytest.approx([math.log(p) for p in (0.3, 0.6, 0.1)])


def test_a_weak_penalty_leaves_a_much_likelier_word() -> None:
    weak = _checked(set(), penalty=0.5)  # 0.6·e^-0.5 = 0.36 > 0.3
    assert generate(_Speller(), _src(), BEAM, terms=weak)[0][0].tokens == [GA, PPO]


def test_a_source_word_is_known_for_its_own_sentence_only() -> None:
    # sentence 0's source has "Gappo" (a name to copy); sentence 1's does not
    out = generate(_Speller(), _src(2), BEAM, terms=_checked({"gappo"}, set()))
    assert [h[0].tokens for h in out] == [[GA, PPO], [GA, TTO]]


def test_a_spoiled_word_is_charged_as_it_is_chosen_even_with_one_beam() -> None:
    # one beam keeps one hypothesis: had "ppo" been charged a step late, "gappo" would
    # already have pushed "gatto" out
    one = DecodeConfig(method="beam", beam_size=1, length_penalty=0.0)
    best = generate(_Speller(), _src(), one, terms=_checked(set(), beam=1))[0][0]
    assert best.tokens == [GA, TTO]
    assert best.score == pytest.approx(math.log(0.3))


class _Wordy(_Speller):
    """Two words: "gappo" (0.6) or "gatto" (0.4), then "è" and the end: the charge for
    "gappo" must follow its hypothesis through the steps after it."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {GA: 1.0},
        (GA,): {PPO: 0.6, TTO: 0.4},
        (GA, PPO): {E: 1.0},
        (GA, TTO): {E: 1.0},
    }


def test_a_charge_stays_with_its_hypothesis_to_the_end() -> None:
    hyps = generate(_Wordy(), _src(2), BEAM, terms=_checked(set(), {"gappo"}))
    assert [h.tokens for h in hyps[0][:2]] == [[GA, TTO, E], [GA, PPO, E]]
    assert [h.score for h in hyps[0][:2]] == pytest.approx([math.log(0.4), math.log(0.6) - 8.0])
    assert hyps[1][0].tokens == [GA, PPO, E]  # the other sentence's source has "gappo"


class _Skipper(_Speller):
    """After "gatto" the model would rather write a lone "▁" (0.6) and then "▁è" — an empty
    word, a double space where a word was — than "▁è" (0.4)."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {GA: 1.0},
        (GA,): {TTO: 1.0},
        (GA, TTO): {SP: 0.6, E: 0.4},
        (GA, TTO, SP): {E: 1.0},
    }


def test_an_empty_word_is_charged_like_an_invented_one() -> None:
    plain = generate(_Skipper(), _src(), BEAM)[0][0]
    assert plain.tokens == [GA, TTO, SP, E]
    hyps = generate(_Skipper(), _src(), BEAM, terms=_checked(set()))[0]
    assert [h.tokens for h in hyps[:2]] == [[GA, TTO, E], [GA, TTO, SP, E]]
    assert [h.score for h in hyps[:2]] == pytest.approx([math.log(0.4), math.log(0.6) - 8.0])


class _Copier(_Speller):
    """Copies the name Dvořák, its "ř" in byte pieces (0.4), or writes "Do" (0.6)."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {DO: 0.6, DVO: 0.4},
        (DVO,): {B1: 1.0},
        (DVO, B1): {B2: 1.0},
        (DVO, B1, B2): {AK: 1.0},
    }


def test_a_source_name_spelled_in_bytes_is_free_to_copy() -> None:
    # "Do" is no word; "Dvořák" is the source's, even while its "ř" is half written
    hyps = generate(_Copier(), _src(), BEAM, terms=_checked({"dvořák"}))[0]
    assert hyps[0].tokens == [DVO, B1, B2, AK]
    assert hyps[0].score == pytest.approx(math.log(0.4))


class _Unlikely(_Speller):
    """After "▁Dvo" the pieces the check looks at (the 2K likeliest, K = 1) all spoil the
    source's "Dvořák", and so does the next one, "tt" (0.22); the byte that goes on with
    it, <0xC5> (0.20), is only fourth."""

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {DVO: 1.0},
        (DVO,): {PPO: 0.30, TTO: 0.28, TT: 0.22, B1: 0.20},
        (DVO, B1): {B2: 1.0},
        (DVO, B1, B2): {AK: 1.0},
    }


def test_when_every_likely_piece_pays_the_check_looks_further_down() -> None:
    one = DecodeConfig(method="beam", beam_size=1, length_penalty=0.0)
    assert generate(_Unlikely(), _src(), one)[0][0].tokens == [DVO, PPO]
    best = generate(_Unlikely(), _src(), one, terms=_checked({"dvořák"}, beam=1))[0][0]
    # "tt" is charged as it is chosen too, though it is not among the two checked first:
    # unpaid, it would have pushed the copy of "Dvořák" out and paid a step later
    assert best.tokens == [DVO, B1, B2, AK]
    assert best.score == pytest.approx(math.log(0.20))


class _Random(_Speller):
    """Random log-probs over the whole vocabulary, the same for the same prefix."""

    def decode(self, tgt_ids: torch.Tensor, cache: _Cache) -> SimpleNamespace:
        rows = []
        for r, tok in enumerate(tgt_ids[:, -1].tolist()):
            if tok != BOS:
                cache.prefixes[r].append(tok)
            seed = hash(tuple(cache.prefixes[r])) % 2**31
            logits = torch.randn(V, generator=torch.Generator().manual_seed(seed)) * 2
            logits[[PAD, BOS]] = -1e9  # specials the model never writes
            rows.append(logits)
        return SimpleNamespace(logits=torch.stack(rows)[:, None, :])


@pytest.mark.parametrize("beam", [1, 2, 4])
def test_skipping_known_word_starts_changes_no_charge(beam: int) -> None:
    # the check passes over word starts that begin a known word without looking at them;
    # with no piece marked so it looks at every one: the searches must be the same
    texts, starts = piece_table(PIECES, EOS)
    sources = [frozenset(), frozenset({"dvořák"}), frozenset({"gappo", "do"})]
    cfg = DecodeConfig(method="beam", beam_size=beam, n_best=beam, length_penalty=0.0)
    model = _Random()
    model.config.max_len = 9
    runs = []
    for free in (None, torch.zeros(V, dtype=torch.bool)):
        lexicon = Lexicon(KNOWN, texts, starts, sources, 3.0, free)
        term = WordPenalty(lexicon, 2 * beam, torch.device("cpu"))
        runs.append(generate(model, _src(3), cfg, terms=[term]))
    assert runs[0] == runs[1]
    assert runs[0] != generate(model, _src(3), cfg)  # and the check changed the search


def test_the_check_is_off_at_zero() -> None:
    off = generate(_Speller(), _src(), BEAM, terms=_checked(set(), penalty=0.0))[0]
    assert off[0].tokens == [GA, PPO]
    assert off == generate(_Speller(), _src(), BEAM)[0]


@pytest.mark.parametrize("penalty", [-1.0, float("inf"), float("nan")])
def test_a_penalty_that_is_not_a_finite_number_is_refused(penalty: float) -> None:
    with pytest.raises(ValueError, match="word-check must be a finite number >= 0"):
        Terms(word_check=penalty)


def test_a_lexicon_for_another_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="2 sources"):
        generate(_Speller(), _src(2), BEAM, terms=_checked(set()))


# ---------------------------------------------------------------------------- model directories
def test_word_list_round_trips_through_a_model_directory(tmp_path: Path) -> None:
    # kept sorted and distinct
    shipped = Translator.from_pretrained(known_words=["è", "gatto", "città", "gatto"])
    words = ["città", "gatto", "è"]
    out = shipped.save_pretrained(tmp_path / "m")
    assert (out / model_dir.WORDS_NAME).read_text(encoding="utf-8") == "città\ngatto\nè\n"
    assert Translator.from_pretrained(out).known_words == words


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"gatto\nDue parole\n", "line 2"),
        (b"gatto\n\xff\n", "not UTF-8"),
        (b"Gatto\n", "line 1"),
        (b"", "is empty"),
    ],
)
def test_a_damaged_word_list_is_a_one_line_error(
    tmp_path: Path, content: bytes, message: str
) -> None:
    (tmp_path / model_dir.WORDS_NAME).write_bytes(content)
    with pytest.raises(ValueError, match=message):
        model_dir.read_words(tmp_path)


def test_a_directory_without_a_word_list_decodes_as_before(tmp_path: Path) -> None:
    shipped = Translator.from_pretrained(known_words=None)
    out = shipped.save_pretrained(tmp_path / "m")
    assert not (out / model_dir.WORDS_NAME).exists()
    bare = Translator.from_pretrained(out)
    assert bare.known_words is None
    # the same as the shipped model with the check turned off
    sentence = "Maroochydore then defeated Caboolture in the Preliminary Final."
    unchecked = Terms().without(["word-check"])
    (got,) = bare.translate(sentence)
    (want,) = Translator.from_pretrained().translate(sentence, terms=unchecked)
    assert got.text == want.text


def test_a_translator_made_with_another_word_list_checks_that_one() -> None:
    # the word check reads its list once for the model (which pieces begin a known word,
    # what the list says of a text): another translator on the same network, made with a new
    # list after the first has translated, must check the new list, and the first its own
    sentence = "Maroochydore then defeated Caboolture in the Preliminary Final."
    words = ["il", "la", "poi"]
    reused = Translator.from_pretrained()
    before = reused.translate(sentence)
    other = reused.replace(known_words=words)
    fresh = Translator.from_pretrained(known_words=words)
    assert other.known_words == fresh.known_words == sorted(words)
    assert other.translate(sentence) == fresh.translate(sentence)
    assert reused.translate(sentence) == before  # unchanged
    assert fresh.translate(sentence) != Translator.from_pretrained().translate(sentence)


def test_the_shipped_model_has_its_training_targets_words() -> None:
    words = Translator.from_pretrained().known_words
    assert words is not None and len(words) > 50_000
    assert {"architettura", "ciao", "gatto", "università"} <= set(words)
    assert words == sorted(words)


def test_the_shipped_model_copies_a_name_it_used_to_misspell() -> None:
    tr = Translator.from_pretrained()
    sentence = "Maroochydore then defeated Caboolture in the Preliminary Final."  # FLORES dev
    checked = tr.translate(sentence)[0].text
    assert "Maroochydore" in checked and "Caboolture" in checked


def test_the_shipped_model_copies_a_name_with_a_letter_it_spells_in_bytes() -> None:
    # "ř" is <0xC5><0x99>, and the model gives <0xC5> after "Dvo" less than the 8 pieces
    # the check looked at, all spoilers: "DvoChocolate personalák" until it looked further
    tr = Translator.from_pretrained()
    for sentence in ("Antonín Dvořák was a composer.", "She lives in Dvořák Street."):
        assert "Dvořák" in tr.translate(sentence)[0].text


# ---------------------------------------------------------------------------- translated words
def test_translated_words_are_those_the_pairs_always_translate() -> None:
    pairs = [
        ("Tom met Mary in July.", "Tom ha incontrato Mary a luglio."),
        ("Tom left in July.", "Tom è partito a luglio."),
        ("Tom left in July.", "Tom è partito a luglio."),  # a duplicate counts once
        ("The police came.", "La polizia è arrivata."),
        ("The police came.", "È arrivata la polizia."),
        ("The POLICE came.", "Arrivò la polizia."),
        ("Open the Police menu.", "Apri il menu Police."),
        ("Boston is big.", "Boston è grande."),
    ]
    # "july" and "in": 2 distinct pairs, in no target; "police": 4, but one target has it
    # (any case), so it is a known word and stays free; "tom": always copied; "boston",
    # "left", "met": one distinct pair only
    assert translated_words(pairs) == ["came", "in", "july", "the"]
    assert translated_words(pairs[:-2]) == ["came", "in", "july", "police", "the"]
    assert translated_words(pairs, least=3) == ["came", "the"]
    with pytest.raises(ValueError, match="least"):
        translated_words(pairs, least=0)


def test_translated_words_round_trip_through_a_model_directory(tmp_path: Path) -> None:
    # kept sorted and distinct
    shipped = Translator.from_pretrained(translated_words=["july", "former", "july"])
    out = shipped.save_pretrained(tmp_path / "m")
    assert (out / model_dir.TRANSLATED_NAME).read_text(encoding="utf-8") == "former\njuly\n"
    assert Translator.from_pretrained(out).translated_words == ["former", "july"]
    # none at all is no file (and reads back as none), not an empty file that reads as damaged
    bare = shipped.replace(translated_words=[]).save_pretrained(tmp_path / "bare")
    assert not (bare / model_dir.TRANSLATED_NAME).exists()
    assert Translator.from_pretrained(bare).translated_words is None
    (tmp_path / model_dir.TRANSLATED_NAME).write_text("july\nTwo words\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        model_dir.read_words(tmp_path, model_dir.TRANSLATED_NAME)


def test_the_shipped_model_translates_a_word_its_data_never_copies() -> None:
    tr = Translator.from_pretrained()
    assert tr.translated_words is not None and len(tr.translated_words) > 10_000
    assert {"july", "yesterday", "vaccine"} <= set(tr.translated_words)
    assert not {"tom", "boston"} & set(tr.translated_words)
    # an odd sentence, but the one where the model's likeliest word is the English one
    sentence = "Former president Jimmy Carter visited the vaccine."
    out = tr.translate(sentence)[0].text
    assert "vaccino" in out and "vaccine" not in out and "Jimmy Carter" in out


def test_the_shipped_model_writes_no_empty_word() -> None:
    # this headline came out as "… Governatore Wins  in primarie": a lone "▁", then a word
    (out,) = Translator.from_pretrained().translate(
        "Former Massachusetts Governor Wins Florida Primary"
    )
    assert "  " not in out.text, out


def test_a_charge_lowers_exactly_what_it_names():
    """Charge.apply subtracts the end-of-word cost from the rows it names (only at the pieces
    it costs), the spoiler cost at each (row, piece) once, and touches nothing else."""
    torch.manual_seed(0)
    rank = torch.randn(5, 7)
    before = rank.clone()
    end_cost = torch.tensor([0.0, 2.0, 0.0, 2.0, 0.0, 0.0, 2.0])
    charge = Charge(
        now=None,
        end_rows=torch.tensor([1, 3]),
        end_cost=end_cost,
        rows=torch.tensor([0, 0, 3]),
        tokens=torch.tensor([4, 4, 1]),
        cost=8.0,
    )
    charge.apply(rank)
    expected = before.clone()
    expected[1] = before[1] - end_cost
    expected[3] = before[3] - end_cost
    expected[0, 4] -= 8.0  # named twice, charged once
    expected[3, 1] -= 8.0
    assert torch.equal(rank, expected)
