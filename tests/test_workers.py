"""attenzione.translator.workers: decoding a translator's batches in other processes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.cli.translate import worker_count
from attenzione.config import search_config
from attenzione.translator.translator import Translator
from attenzione.translator.workers import Workers
from compare import assert_same_results
from tiny_model import WORDS, tiny_translator

# 12 texts of 2–6 words: batches of 4 make three batches of different lengths
TEXTS = [" ".join(itertools.islice(itertools.cycle(WORDS), i, i + 2 + i % 5)) for i in range(12)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny")
    tiny_translator(seed=3).save_pretrained(directory)
    return directory


def test_workers_give_the_translations_one_process_gives(model_dir: Path) -> None:
    """The same texts and ids; scores to a tolerance (a worker runs on its own threads)."""
    translator = Translator.from_pretrained(model_dir)
    alone = translator.translate(TEXTS, batch_size=4)
    n_best = translator.translate(TEXTS, search=search_config(3, 2), batch_size=4)
    streamed = list(translator.translate_iter(TEXTS, batch_size=2, chunk=5))
    with Workers.of(translator, 2) as workers:
        workers.wait()  # both loaded
        there = translator.replace(workers=workers)  # the same network, its batches out
        here = there.engine.decode_batch

        def not_here(*args: object) -> object:
            raise AssertionError("a batch was decoded in this process")

        there.engine.decode_batch = not_here  # type: ignore[method-assign]
        assert_same_results(there.translate(TEXTS, batch_size=4), alone)
        n_best_there = there.translate(TEXTS, search=search_config(3, 2), batch_size=4)
        assert_same_results(n_best_there, n_best)
        there.engine.decode_batch = here  # type: ignore[method-assign]
        # streamed (a last chunk of one batch is decoded here): each next chunk's batches go
        # out before a chunk is given, in input order
        assert_same_results(list(there.translate_iter(TEXTS, batch_size=2, chunk=5)), streamed)
        # and an error in the chunk read ahead comes after the chunk before is out
        given = []
        bad = [*TEXTS[:5], *TEXTS[:2], 3]
        with pytest.raises(ValueError, match="not a string"):
            for t in there.translate_iter(bad, batch_size=2, chunk=5):  # type: ignore[arg-type]
                given.append(t)
        assert_same_results(given, streamed[:5])
        # one batch is decoded here, as without workers
        assert_same_results(there.translate(TEXTS[:3], batch_size=4), alone[:3])


def test_the_command_translates_a_file_the_same_with_workers(
    model_dir: Path, tmp_path: Path
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"out{workers}.txt"
        args = ["translate", "--model", str(model_dir), "-i", str(src), "-o", str(out)]
        result = CliRunner().invoke(app, [*args, "--batch-size", "4", "--workers", workers])
        assert result.exit_code == 0, result.output
        outputs.append(out.read_text(encoding="utf-8"))
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == len(TEXTS)


@pytest.mark.parametrize("workers, threads", [(0, 1), (2, 0)])
def test_a_pool_of_no_process_or_no_thread_is_refused(
    model_dir: Path, workers: int, threads: int
) -> None:
    with pytest.raises(ValueError, match="workers and threads must be >= 1"):
        Workers(model_dir, workers, threads=threads)


def test_a_negative_worker_count_is_a_one_line_error() -> None:
    result = CliRunner().invoke(app, ["translate", "hello", "--workers", "-1"])
    assert result.exit_code != 0
    assert "--workers must be >= 0" in result.output


def test_a_model_directory_a_worker_cannot_load_is_the_loading_error(tmp_path: Path) -> None:
    with (
        Workers(tmp_path / "missing", 2) as workers,
        pytest.raises(FileNotFoundError, match="does not exist"),
    ):
        workers.wait()


def test_workers_need_a_translator_loaded_from_a_directory() -> None:
    with pytest.raises(ValueError, match="this translator was not loaded"):
        Workers.of(tiny_translator())


@pytest.mark.parametrize(
    "asked, texts, batch_size, n_best, cores, expected",
    [
        (0, 997, 64, 1, 2, 2),  # FLORES dev: a whole chunk of eight batches
        (0, 997, 64, 1, 1, 1),  # one core: nothing to overlap
        (0, 300, 64, 1, 2, 1),  # less than a chunk: five batches gained nothing
        (0, 2000, 256, 1, 2, 1),  # two batches a chunk: one worker would wait
        (3, 300, 64, 1, 2, 3),  # asked for, and there are batches to share
        (2, 2000, 512, 1, 2, 1),  # one batch a chunk: nothing to share, whatever was asked
        (2, 1, 64, 4, 2, 1),  # one text's n-best list
    ],
)
def test_the_command_starts_workers_only_with_batches_to_share(
    asked: int, texts: int, batch_size: int, n_best: int, cores: int, expected: int
) -> None:
    assert worker_count(asked, texts, batch_size, n_best, cores) == expected
