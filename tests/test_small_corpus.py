"""A small corpus trains as the README shows it (issue 53): held-out sets the user did not size
follow the corpus, and sizes that leave nothing to train on are one line naming the fix."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.training.data_prep import held_out_sizes

NOUNS = [("cat", "gatto"), ("dog", "cane"), ("book", "libro"), ("train", "treno"), ("owl", "gufo")]
ADJECTIVES = [("red", "rosso"), ("old", "vecchio"), ("new", "nuovo"), ("small", "piccolo")]
PLACES = [("here", "qui"), ("there", "lì"), ("at home", "a casa")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 distinct made-up pairs (a number keeps each sentence its own)."""
    combos = itertools.cycle(itertools.product(NOUNS, ADJECTIVES, PLACES))
    lines = []
    for i, ((noun, nome), (adj, agg), (place, luogo)) in zip(range(3000), combos, strict=False):
        lines.append(f"The {adj} {noun} {i} is {place}.\tIl {nome} {agg} {i} è {luogo}.\n")
    path = tmp_path_factory.mktemp("small") / "corpus.tsv"
    path.write_text("".join(lines), encoding="utf-8")
    return path


TINY = ["--preset", "tiny", "--vocab-size", "64", "--max-steps", "2", "--threads", "1"]


def test_three_thousand_pairs_train_with_the_default_held_out_sets(
    corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "--data", str(corpus), "--out", str(out), *TINY])
    assert res.exit_code == 0, res.output
    assert "held out 300 dev + 300 test pairs (a tenth of the corpus" in res.output, res.output
    assert len((out / "data" / "dev.tsv").read_text(encoding="utf-8").splitlines()) == 300
    assert len((out / "data" / "train.tsv").read_text(encoding="utf-8").splitlines()) == 2400
    assert '"dev_size": 300' in (out / "last" / "train_config.json").read_text()


def test_a_training_log_gets_no_progress_bar(corpus: Path, tmp_path: Path) -> None:
    """CliRunner's stderr is not a terminal, as a log file is not: no bar redrawn into it
    (the evaluation lines and "stopped: …" say how the run went)."""
    args = ["train", "--data", str(corpus), "--out", str(tmp_path / "run"), *TINY]
    res = CliRunner().invoke(app, [*args, "--dev-size", "50", "--test-size", "50"])
    assert res.exit_code == 0, res.output
    assert "stopped: reached max_steps=2" in res.output
    assert "\r" not in res.output and "step/s" not in res.output and "s/step" not in res.output


def test_held_out_sizes_that_leave_nothing_to_train_name_the_fix(
    corpus: Path, tmp_path: Path
) -> None:
    args = ["train", "--data", str(corpus), "--out", str(tmp_path / "r"), *TINY]
    res = CliRunner().invoke(app, [*args, "--dev-size", "2000", "--test-size", "2000"])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, res.output
    assert "leave 0 for training" in errors[0]
    assert "--dev-size 300 --test-size 300" in errors[0], errors[0]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("usable", "scaled", "expected"),
    [
        (3_000, {"dev_size", "test_size"}, (300, 300)),
        (500_000, {"dev_size", "test_size"}, (2000, 2000)),  # a large corpus: as before
        (3_000, {"test_size"}, (2000, 300)),  # a size the user gave stays
        (5, {"dev_size", "test_size"}, (1, 0)),  # at least one dev pair
        (3_000, set(), (2000, 2000)),
    ],
)
def test_held_out_sizes_scale_with_the_corpus(
    usable: int, scaled: set[str], expected: tuple[int, int]
) -> None:
    assert held_out_sizes(usable, 2000, 2000, frozenset(scaled)) == expected
