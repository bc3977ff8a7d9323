"""Corpus readers, cleaning and the sentence-disjoint split."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from attenzione.data import (
    CorpusError,
    clean_pairs,
    load_corpus,
    normalize,
    read_pairs,
    read_parallel,
    split_by_sentence,
    write_pairs,
)


def test_tatoeba_three_columns_and_two_column_tsv(tmp_path: Path) -> None:
    p = tmp_path / "ita.txt"
    p.write_text(
        "Hi.\tCiao!\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (a) & #2 (b)\nRun!\tCorri!\n"
    )
    assert read_pairs(p) == [("Hi.", "Ciao!"), ("Run!", "Corri!")]
    with pytest.raises(CorpusError, match=r"ita.txt:1: expected 2 tab-separated columns, found 3"):
        read_pairs(p, fmt="tsv")


def test_gzip_is_transparent(tmp_path: Path) -> None:
    p = tmp_path / "c.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("I am hungry.\tHo fame.\n")
    assert read_pairs(p) == [("I am hungry.", "Ho fame.")]


def test_a_broken_line_1234_is_named(tmp_path: Path) -> None:
    lines = [f"Sentence {i}.\tFrase {i}." for i in range(1, 1301)]
    lines[1233] = "only one column here"
    p = tmp_path / "big.tsv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        CorpusError, match=r"big.tsv:1234: expected 2 or 3 tab-separated columns, found 1"
    ):
        read_pairs(p)
    stats: dict[str, object] = {}
    pairs = read_pairs(p, skip_bad=True, stats=stats)
    assert len(pairs) == 1299 and stats["skipped"] == 1
    assert "big.tsv:1234:" in stats["first_errors"][0]  # type: ignore[index]


def test_empty_side_and_undecodable_bytes(tmp_path: Path) -> None:
    p = tmp_path / "bad.tsv"
    p.write_bytes(b"Good.\tBene.\n \tVuoto.\nBad \xff byte.\tByte.\n")
    with pytest.raises(CorpusError, match=r"bad.tsv:2: empty source side"):
        read_pairs(p)
    stats: dict[str, object] = {}
    assert read_pairs(p, skip_bad=True, stats=stats) == [("Good.", "Bene.")]
    assert stats["skipped"] == 2
    assert any("bad.tsv:3: undecodable UTF-8" in e for e in stats["first_errors"])  # type: ignore[attr-defined]


def test_moses_pairs_and_count_mismatch(tmp_path: Path) -> None:
    (tmp_path / "train.en").write_text("Hello.\nThanks.\n")
    (tmp_path / "train.it").write_text("Ciao.\nGrazie.\n")
    assert load_corpus(tmp_path / "train") == [("Hello.", "Ciao."), ("Thanks.", "Grazie.")]
    (tmp_path / "odd.en").write_text("One.\nTwo.\n")
    (tmp_path / "odd.it").write_text("Uno.\n")
    with pytest.raises(CorpusError, match="has 2 lines but"):
        read_parallel(tmp_path / "odd.en", tmp_path / "odd.it")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus(tmp_path / "nothing")


def test_normalize_and_clean() -> None:
    assert normalize("  L\u2019architettura\u00a0 e\u0300  bella ") == "L'architettura è bella"
    pairs = [("A  b.", "C d."), ("A b.", "C d."), ("x " * 60, "y"), ("Short.", "Corta.")]
    assert clean_pairs(pairs, max_words=50) == [("A b.", "C d."), ("Short.", "Corta.")]


def test_split_is_disjoint_by_sentence_on_both_sides() -> None:
    pairs = [(f"English {i}.", f"Italiano {i}.") for i in range(400)]
    # a chain: A-x, A-y, B-y must stay together; and several variants of one English sentence
    pairs += [("Chain A.", "Catena x."), ("Chain A.", "Catena y."), ("Chain B.", "Catena y.")]
    pairs += [("Run!", "Corri!"), ("Run!", "Corra!"), ("Run!", "Correte!")]
    splits = split_by_sentence(pairs, dev_size=40, test_size=40, seed=3)
    assert sorted(splits.train + splits.dev + splits.test) == sorted(pairs)
    assert 40 <= len(splits.dev) <= 43 and 40 <= len(splits.test) <= 43
    parts = {"train": splits.train, "dev": splits.dev, "test": splits.test}
    for a in parts:
        for b in parts:
            if a < b:
                assert not {s for s, _ in parts[a]} & {s for s, _ in parts[b]}
                assert not {t for _, t in parts[a]} & {t for _, t in parts[b]}
    chain = {p for p in pairs if p[0].startswith("Chain")}
    assert any(chain <= set(part) for part in parts.values())
    again = split_by_sentence(pairs, dev_size=40, test_size=40, seed=3)
    assert again.dev == splits.dev
    assert split_by_sentence(pairs, dev_size=40, test_size=40, seed=4).dev != splits.dev


def test_write_pairs_round_trip(tmp_path: Path) -> None:
    pairs = [("È qui.", "It's here."), ("Dov'è?", "Where?")]
    for name in ("out.tsv", "out.tsv.gz"):
        write_pairs(pairs, tmp_path / name)
        assert read_pairs(tmp_path / name) == pairs
    assert not list(tmp_path.glob(".*.tmp"))
