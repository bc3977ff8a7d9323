"""Tokenizers: stable specials, Italian punctuation and apostrophes, save/load identity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attenzione.data import SPECIALS, SentencePieceTokenizer, WordTokenizer, load_tokenizer

ITALIAN = [
    "L'architettura è stata introdotta nel 2017.",
    "Dov'è la stazione?",
    '"Sì," disse.',
    "È stata un'idea dell'insegnante (non mia)!",
]
ENGLISH = ["I don't know Tom's car.", "The transformer architecture was introduced in 2017."]


def test_word_tokenizer_splits_like_glove_and_rejoins_italian() -> None:
    tok = WordTokenizer.train(ITALIAN + ENGLISH, lowercase=False)
    assert tok.split("I don't know Tom's car.") == [
        "I",
        "do",
        "n't",
        "know",
        "Tom",
        "'s",
        "car",
        ".",
    ]
    assert tok.split("L'architettura è") == ["L'", "architettura", "è"]
    for sentence in ITALIAN[:2] + ENGLISH:
        assert tok.decode(tok.encode(sentence)) == sentence
    assert tok.decode(tok.encode(ITALIAN[3])) == ITALIAN[3]


def test_word_vocabulary_is_frequency_ordered_with_limits() -> None:
    tok = WordTokenizer.train(["a a a b b c", "a b d"], min_count=2, max_size=6)
    assert tok.vocab[:4] == list(SPECIALS)
    assert tok.vocab[4:] == ["a", "b"]
    assert tok.encode("c a") == [3, 4]  # unknown → <unk>
    tok = WordTokenizer.train(["a b"], extra_words=["king", "a"])
    assert tok.vocab[-1] == "king" and tok.vocab.count("a") == 1


def test_word_tokenizer_lowercases_by_default() -> None:
    tok = WordTokenizer.train(["The Cat"])
    assert tok.encode("THE cat") == tok.encode("the Cat")
    assert [tok.id_to_token(i) for i in tok.encode("The Cat")] == ["the", "cat"]


@pytest.fixture(scope="module")
def spm() -> SentencePieceTokenizer:
    texts = [f"{s} {i}" for i in range(60) for s in ITALIAN + ENGLISH]
    return SentencePieceTokenizer.train(texts, vocab_size=70)


def test_sentencepiece_specials_and_round_trip(spm: SentencePieceTokenizer) -> None:
    assert [spm.id_to_token(i) for i in range(4)] == list(SPECIALS)
    assert spm.vocab_size == 70
    for sentence in ITALIAN + ENGLISH:
        ids = spm.encode(sentence)
        assert all(i > 2 for i in ids)
        assert spm.decode(ids) == sentence
    assert spm.decode([1, *spm.encode("Dov'è?"), 2, 0, 0]) == "Dov'è?"


def test_save_and_load_are_identical(spm: SentencePieceTokenizer, tmp_path: Path) -> None:
    word = WordTokenizer.train(ITALIAN, lowercase=False)
    for tok, name in ((spm, "spm"), (word, "word")):
        tok.save(tmp_path / name)
        again = load_tokenizer(tmp_path / name)
        assert type(again) is type(tok) and again.vocab_size == tok.vocab_size
        for sentence in ITALIAN + ENGLISH:
            assert again.encode(sentence) == tok.encode(sentence)
            assert again.decode(tok.encode(sentence)) == tok.decode(tok.encode(sentence))


def test_bad_tokenizer_requests_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="vocab_size=5000"):
        SentencePieceTokenizer.train(["tiny corpus"] * 5, vocab_size=5000)
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_tokenizer(tmp_path)
    (tmp_path / "tokenizer.json").write_text('{"type": "bpe-magic"}')
    with pytest.raises(ValueError, match="unknown tokenizer type"):
        load_tokenizer(tmp_path)


ROUND_TRIP = [
    "The transformer architecture was introduced in 2017.",
    "Call 555-1234 or visit https://example.org/path?q=1&x=2 before 10:30.",
    "Perché è così? Città, più, però — «virgolette» e l'apostrofo.",
    "Prices: €3.50, £12, 100% of 1,000,000 (x² + y³ ≥ z) ~ file_name.txt",
    "Emoji 🙂 and 中文 and Ελληνικά survive.",
]


def test_sentencepiece_with_byte_fallback_round_trips_anything_without_unk() -> None:
    training = (ENGLISH + ITALIAN) * 20 + ["numbers 0 1 2 3 4 5 6 7 8 9"] * 5
    tok = SentencePieceTokenizer.train(
        training,
        vocab_size=320,
        split_digits=True,
        byte_fallback=True,
        character_coverage=0.9999,
        normalization="identity",
    )
    for text in ROUND_TRIP:
        ids = tok.encode(text)
        assert tok.unk_id not in ids, text
        assert tok.decode(ids) == text
    # digits are split, so any number is spelled the same way, digit by digit
    pieces = [tok.id_to_token(i) for i in tok.encode("2017 20177")]
    assert [p.strip("▁") for p in pieces if p.strip("▁")] == list("2017") + list("20177")


def test_subword_sampling_varies_the_pieces_keeps_the_text_and_repeats_with_its_seed(
    spm: SentencePieceTokenizer,
) -> None:
    texts = (ITALIAN + ENGLISH) * 4
    best = spm.encode_batch(texts)
    drawn = spm.sample_batch(texts, alpha=0.1, seed=11)
    assert drawn != best  # other segmentations are drawn ...
    assert sum(map(len, drawn)) > sum(map(len, best))  # ... of smaller pieces
    assert [spm.decode(ids) for ids in drawn] == texts  # of the same text
    assert spm.sample_batch(texts, alpha=0.1, seed=11) == drawn  # a pure function of the seed
    assert spm.sample_batch(texts, alpha=0.1, seed=12) != drawn
    with pytest.raises(ValueError, match="alpha"):
        spm.sample_batch(texts, alpha=0.0, seed=1)


def test_subword_sampling_draws_the_same_in_another_process(
    spm: SentencePieceTokenizer, tmp_path: Path
) -> None:
    # a resumed run is another process: its draw must not depend on the process's state
    # (SentencePiece's own sampler, seeded the same way, drew differently in each)
    spm.save(tmp_path / "tok")
    texts = (ITALIAN + ENGLISH) * 4
    code = (
        "import json, sys; from attenzione.data import load_tokenizer; "
        "t = load_tokenizer(sys.argv[1]); "
        "print(json.dumps(t.sample_batch(json.loads(sys.argv[2]), alpha=0.1, seed=11)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "tok"), json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(run.stdout) == spm.sample_batch(texts, alpha=0.1, seed=11)


def test_a_word_tokenizer_has_no_segmentations_to_sample() -> None:
    word = WordTokenizer.train(ITALIAN)
    with pytest.raises(ValueError, match="SentencePiece"):
        word.sample_batch(ITALIAN, alpha=0.5, seed=1)
