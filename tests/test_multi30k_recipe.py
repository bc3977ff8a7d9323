"""The Multi30k recipe (examples/multi30k/run.sh) end to end on a made-up copy of the dataset's
layout: it trains, chooses on val and prints one BLEU line per test file (no value asserted)."""

from __future__ import annotations

import gzip
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "multi30k" / "run.sh"
TESTS = ("test_2016_flickr", "test_2017_mscoco")


def _made_up_pairs(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """Sentences of a made-up xx and their word-by-word yy translation (each word reversed),
    tokenized and lower-cased as Multi30k's tok/ files, entities included."""
    words = ["".join(rng.choice("aeioubdgklmnprstvz") for _ in range(rng.randint(2, 7)))]
    while len(words) < 80:
        words.append("".join(rng.choice("aeioubdgklmnprstvz") for _ in range(rng.randint(2, 7))))
    pairs = []
    for _ in range(n):
        src = [rng.choice(words) for _ in range(rng.randint(3, 9))]
        tail = rng.choice([".", "&apos;s .", "&quot; , ."])
        pairs.append((" ".join(src) + f" {tail}", " ".join(w[::-1] for w in src) + " ."))
    return pairs


def _write(data: Path, split: str, pairs: list[tuple[str, str]]) -> None:
    for i, lang in enumerate(("xx", "yy")):
        text = "".join(p[i] + "\n" for p in pairs)
        (data / "tok" / f"{split}.lc.norm.tok.{lang}").write_text(text, encoding="utf-8")


def _recipe(data: Path, run: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The recipe on ``data`` (xx→yy), a few tiny-model steps."""
    return subprocess.run(
        ["bash", str(SCRIPT), str(data), "xx", "yy", str(run), "0.3"],
        env={
            **os.environ,
            "ATTENZIONE_RECIPE_MAX_STEPS": "4",
            "ATTENZIONE_RECIPE_PRESET": "tiny",
            "ATTENZIONE_RECIPE_THREADS": "1",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="the recipe is a bash script")
def test_recipe_prints_one_bleu_line_per_test_file(tmp_path: Path) -> None:
    rng = random.Random(0)
    data = tmp_path / "data"
    (data / "tok").mkdir(parents=True)
    (data / "raw").mkdir()
    _write(data, "train", _made_up_pairs(300, rng))
    _write(data, "val", _made_up_pairs(12, rng))
    for name in TESTS:
        pairs = _made_up_pairs(8, rng)
        _write(data, name, pairs)
    # a raw, cased reference for one test set: the cased variant is scored where it exists
    refs = (data / "tok" / f"{TESTS[0]}.lc.norm.tok.yy").read_text(encoding="utf-8")
    with gzip.open(data / "raw" / f"{TESTS[0]}.yy.gz", "wt", encoding="utf-8") as f:
        f.write(refs.title())
    run = tmp_path / "run"
    done = _recipe(data, run)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stdout.splitlines() if re.match(r"test_\S+ BLEU ", ln)]
    assert sorted(ln.split()[0] for ln in lines) == sorted(TESTS)
    for line in lines:
        assert re.match(r"test_\S+ BLEU \d+(\.\d+)?\b", line), line
    assert "lowercased model" in next(ln for ln in lines if ln.startswith(TESTS[0]))
    assert (run / "choice.txt").read_text(encoding="utf-8").startswith("chosen on val")


@pytest.mark.skipif(shutil.which("bash") is None, reason="the recipe is a bash script")
def test_recipe_explains_its_usage(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "usage:" in done.stderr
    done = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path), "en", "de", str(tmp_path / "run")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "train.lc.norm.tok.en" in done.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="the recipe is a bash script")
def test_the_cased_variant_trains_and_tests_on_the_raw_text(tmp_path: Path) -> None:
    """ATTENZIONE_RECIPE_TEXT=raw reads DATA/raw/ (gzipped, cased, as the dataset ships it)
    and scores with sacreBLEU's defaults."""
    rng = random.Random(1)
    data = tmp_path / "data"
    (data / "raw").mkdir(parents=True)
    for split, n in (("train", 300), ("val", 12), (TESTS[0], 8)):
        pairs = _made_up_pairs(n, rng)
        if split == "train":  # a tab inside a sentence, as in Multi30k's raw train.de
            pairs[5] = (pairs[5][0], pairs[5][1].replace(" ", " \t", 1))
        for i, lang in enumerate(("xx", "yy")):
            with gzip.open(data / "raw" / f"{split}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.write("".join(p[i].capitalize().replace(" .", ".") + "\n" for p in pairs))
    run = tmp_path / "run"
    done = _recipe(data, run, ATTENZIONE_RECIPE_TEXT="raw")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stdout.splitlines() if re.match(r"test_\S+ BLEU ", ln)]
    assert len(lines) == 1 and re.match(rf"{TESTS[0]} BLEU \d+(\.\d+)? \(raw text, cased", lines[0])
    assert "text raw" in (run / "settings.txt").read_text(encoding="utf-8")
    trained = (run / "data" / "train.tsv").read_text(encoding="utf-8").splitlines()
    assert len(trained) == 300 and trained[0][:1].isupper()
    assert all(line.count("\t") == 1 for line in trained)
    assert "train.yy.gz: 1 line(s) with a tab, read as a space" in done.stderr
    done = _recipe(data, tmp_path / "run2", ATTENZIONE_RECIPE_TEXT="cased")
    assert done.returncode == 2 and "ATTENZIONE_RECIPE_TEXT must be tok or raw" in done.stderr
