"""Run directories across versions and interruptions: resume, metrics, settings, attribution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import TrainConfig
from attenzione.data.attribution import TATOEBA, corpus_attribution, run_attribution
from attenzione.training.run_state import MetricsLog, Progress
from attenzione.training.step import resolve_device
from attenzione.training.trainer import train
from attenzione.translator import model_dir
from toy_corpus import toy_pairs, toy_train_config, write_toy_corpus

QUIET = {"log": lambda *a, **k: None}


def _cfg(corpus: Path, out: Path, **kw: object) -> TrainConfig:
    """The toy run, evaluated every 10 steps on 4 dev sentences, on the CPU."""
    return toy_train_config(
        corpus, out, **{"dev_bleu_sentences": 4, "eval_every": 10, "device": "cpu", **kw}
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("corpus") / "toy.tsv")


def _records(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_run_written_by_the_earlier_code_resumes(corpus: Path, tmp_path: Path) -> None:
    """The pre-issue-12 layout, rebuilt by hand: training_state.pt's progress without
    last_eval_step, train_config.json without the new fields, Tatoeba credited in info.json."""
    run = tmp_path / "old"
    train(_cfg(corpus, run, max_steps=10), **QUIET)
    last = run / "last"
    state = torch.load(last / model_dir.STATE_NAME, weights_only=True)
    del state["progress"]["last_eval_step"]
    torch.save(state, last / model_dir.STATE_NAME)
    saved = json.loads((last / model_dir.TRAIN_CONFIG_NAME).read_text())
    for new_field in ("device", "attribution"):
        del saved[new_field]
    (last / model_dir.TRAIN_CONFIG_NAME).write_text(json.dumps(saved))
    logged: list[str] = []
    train(_cfg(corpus, run, max_steps=15), resume=True, log=logged.append)
    assert any("resumed" in m and "at step 10" in m for m in logged)
    evals = [r["step"] for r in _records(run) if "dev_bleu" in r]
    assert evals == [10, 15]  # step 10 was evaluated before: not again
    assert json.loads((run / "last" / "info.json").read_text())["step"] == 15


def test_a_run_saved_in_marians_sinusoid_order_restarts_from_init(
    corpus: Path, tmp_path: Path
) -> None:
    """A checkpoint whose config still says ``sinusoid_layout: "halves"`` (an import
    fine-tuned before issue 65) loads converted, but its Adam moments are in the old order:
    --resume refuses in one line and names --init-from, which works."""
    run = tmp_path / "halves"
    train(_cfg(corpus, run, max_steps=2), **QUIET)
    config = run / "last" / model_dir.CONFIG_NAME
    config.write_text(json.dumps({**json.loads(config.read_text()), "sinusoid_layout": "halves"}))
    base = ["train", "--no-progress", "--threads", "1", "--device", "cpu"]
    res = CliRunner().invoke(app, [*base, "--out", str(run), "--resume", "--max-steps", "3"])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--init-from" in res.output and "Marian's order" in res.output, res.output
    again = [*base, "--data", str(corpus), "--out", str(tmp_path / "again"), "--preset", "tiny"]
    again += ["--vocab-size", "48", "--dev-size", "8", "--test-size", "8", "--max-steps", "1"]
    res = CliRunner().invoke(app, [*again, "--init-from", str(run / "last")])
    assert res.exit_code == 0, res.output


def test_a_resumed_run_does_not_log_a_step_twice(corpus: Path, tmp_path: Path) -> None:
    """A kill after the evaluation of step 20 was logged but before last/ was saved: the
    resumed run evaluates step 20 again, and the log keeps one record of it."""
    run = tmp_path / "dup"
    train(_cfg(corpus, run, max_steps=10), **QUIET)
    log = MetricsLog(run)
    log.append({"step": 11, "epoch": 1, "train_loss": 9.0})
    log.append({"step": 20, "epoch": 2, "dev_loss": 9.0, "dev_bleu": 0.0, "dev_chrf": 0.0})
    with open(log.path, "a") as f:
        f.write('{"step": 2')  # a line cut short by the kill
    train(_cfg(corpus, run, max_steps=20), resume=True, **QUIET)
    records = _records(run)
    evals = [r["step"] for r in records if "dev_bleu" in r]
    assert evals == [10, 20]
    assert all(r["dev_loss"] != 9.0 for r in records if "dev_loss" in r)


def test_resume_says_which_requested_settings_it_keeps(corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "keep"
    args = ["train", "--data", str(corpus), "--out", str(run), "--preset", "tiny"]
    args += ["--vocab-size", "48", "--dev-size", "8", "--test-size", "8", "--no-progress"]
    args += ["--threads", "1", "--device", "cpu"]
    res = CliRunner().invoke(app, [*args, "--max-steps", "2"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        app, [*args, "--max-steps", "3", "--resume", "--preset", "small", "--lr", "0.05"]
    )
    assert res.exit_code == 0, res.output
    kept = [line for line in res.output.splitlines() if "--resume keeps" in line]
    assert len(kept) == 1
    assert "preset='tiny' (asked: 'small')" in kept[0] and "lr=" in kept[0]
    assert "vocab_size" not in kept[0]  # given, but unchanged: nothing to report
    cfg = TrainConfig.load(run / "last" / model_dir.TRAIN_CONFIG_NAME)
    assert cfg.preset == "tiny" and cfg.max_steps == 3
    # --resume needs no --data: the run keeps its prepared data and its corpora's names
    res = CliRunner().invoke(
        app, ["train", "--out", str(run), "--resume", "--max-steps", "4", "--no-progress"]
    )
    assert res.exit_code == 0, res.output
    cfg = TrainConfig.load(run / "last" / model_dir.TRAIN_CONFIG_NAME)
    assert cfg.data == str(corpus) and cfg.max_steps == 4
    res = CliRunner().invoke(app, ["train", "--out", str(tmp_path / "new"), "--max-steps", "1"])
    assert res.exit_code == 2 and "--data" in res.output


def test_a_moses_prefix_trains_from_the_command_line(tmp_path: Path) -> None:
    """docs/training.md's ``--data PREFIX`` with PREFIX.en + PREFIX.it (once refused by the CLI)."""
    pairs = toy_pairs()
    (tmp_path / "toy.en").write_text("".join(s + "\n" for s, _ in pairs))
    (tmp_path / "toy.it").write_text("".join(t + "\n" for _, t in pairs))
    res = CliRunner().invoke(
        app,
        ["train", "--data", str(tmp_path / "toy"), "--out", str(tmp_path / "r")]
        + ["--preset", "tiny", "--vocab-size", "48", "--dev-size", "8", "--test-size", "8"]
        + ["--max-steps", "2", "--no-progress", "--threads", "1", "--device", "cpu"],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r" / "last" / "model.safetensors").is_file()


def test_attribution_comes_from_the_corpus_or_the_user(corpus: Path, tmp_path: Path) -> None:
    assert corpus_attribution(corpus) is None  # two columns: nobody to credit
    anki = tmp_path / "ita.txt"
    anki.write_text(
        "".join(
            f"{s}\t{t}\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i} (alice)\n"
            for i, (s, t) in enumerate(toy_pairs())
        )
    )
    assert corpus_attribution(anki) == TATOEBA
    run = tmp_path / "anki"
    train(_cfg(anki, run, max_steps=1), **QUIET)
    assert json.loads((run / "last" / "info.json").read_text())["attribution"] == TATOEBA
    mine = tmp_path / "mine"
    train(_cfg(corpus, mine, max_steps=1, attribution="My own sentences, CC0."), **QUIET)
    info = json.loads((mine / "last" / "info.json").read_text())
    assert info["attribution"] == "My own sentences, CC0."
    # a warm start: the weights still hold what the first model learnt, so its credit stays
    warm = tmp_path / "warm"
    train(_cfg(corpus, warm, max_steps=1, init_from=str(run / "last")), **QUIET)
    assert json.loads((warm / "last" / "info.json").read_text())["attribution"] == TATOEBA
    both = tmp_path / "both"
    cfg = _cfg(corpus, both, max_steps=1, init_from=str(run / "last"), attribution="Mine, CC0.")
    train(cfg, **QUIET)
    info = json.loads((both / "last" / "info.json").read_text())
    assert info["attribution"] == f"Mine, CC0.\n{TATOEBA}"
    # a credit the run gives itself is not repeated; each new one is added once
    assert run_attribution([], "Mine, CC0.", "A.\nMine, CC0.\nB.") == "Mine, CC0.\nA.\nB."
    assert run_attribution([], None, "A.\nB.") == "A.\nB."
    assert run_attribution([], None, None) is None
    # paragraphs are compared whole: an inherited credit inside a longer one is still added
    assert run_attribution([], "Data by A. and B.", "A.") == "Data by A. and B.\nA."


def test_progress_reads_the_state_of_earlier_versions() -> None:
    old = {"step": 30, "epoch": 2, "batch_in_epoch": 1, "best_bleu": 1.0}
    old |= {"evals_without_gain": 0, "train_seconds": 3.0}
    old["history"] = json.dumps([{"step": 10, "dev_bleu": 1.0}, {"step": 20, "dev_bleu": 0.5}])
    prog = Progress.from_state(old)
    assert prog.last_eval_step == 20 and prog.step == 30
    assert Progress.from_state(prog.to_state()) == prog


def test_device_choice() -> None:
    assert resolve_device("cpu").type == "cpu"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_training_runs_on_the_gpu(corpus: Path, tmp_path: Path) -> None:
    run = tmp_path / "gpu"
    train(_cfg(corpus, run, max_steps=3, device="cuda"), **QUIET)
    train(_cfg(corpus, run, max_steps=5, device="cuda"), resume=True, **QUIET)
    assert json.loads((run / "last" / "info.json").read_text())["step"] == 5


def test_a_run_directory_follows_the_umask(corpus: Path, tmp_path: Path) -> None:
    """Checkpoints and splits used to be 0600/0700 whatever the umask said."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        run = tmp_path / "modes"
        train(_cfg(corpus, run, max_steps=1), **QUIET)
    finally:
        os.umask(old)

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(run / "data" / "train.tsv") == 0o644
    assert mode(run / "last") == 0o755 and mode(run / "best") == 0o755
    for name in ("model.safetensors", "training_state.pt", "train_config.json", "info.json"):
        assert mode(run / "last" / name) == 0o644, name


def test_attribution_of_a_weighted_extra_corpus(corpus: Path, tmp_path: Path) -> None:
    """Extra corpora are stored as PATH:WEIGHT; their credits are still read."""
    anki = tmp_path / "anki.tsv"
    anki.write_text("Hi.\tCiao.\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (a)\n")
    run = tmp_path / "mixed"
    train(_cfg(corpus, run, max_steps=1, extra_data=(f"{anki}:2",)), **QUIET)
    assert json.loads((run / "last" / "info.json").read_text())["attribution"] == TATOEBA


def test_resume_keeps_the_runs_own_value_of_a_changeable_setting_left_out() -> None:
    from attenzione.training.setup import resumed_config

    saved = TrainConfig(
        data="a.tsv", out="run", max_minutes=135, num_threads=2, keep_snapshots=4,
        save_every_minutes=10,
    )  # fmt: skip
    given = TrainConfig(data="", out="moved", max_minutes=30)  # the CLI's defaults elsewhere
    cfg, notes = resumed_config(given, saved, explicit={"out", "max_minutes"})
    assert (cfg.out, cfg.max_minutes) == ("moved", 30)  # given: this invocation's
    assert (cfg.num_threads, cfg.keep_snapshots, cfg.save_every_minutes) == (2, 4, 10)
    assert cfg.data == "a.tsv" and notes == []
    # the budget is one setting: a new --max-steps drops the run's old --max-minutes
    cfg, _ = resumed_config(
        TrainConfig(data="", out="run", max_steps=40), saved, explicit={"out", "max_steps"}
    )
    assert (cfg.max_steps, cfg.max_minutes, cfg.epochs) == (40, None, None)
    assert cfg.keep_snapshots == 4
    # from Python, without the CLI's list of what was set, every changeable value is taken
    cfg, _ = resumed_config(given, saved, explicit=None)
    assert cfg.keep_snapshots == given.keep_snapshots and cfg.num_threads == given.num_threads


def test_each_corpus_credit_is_its_own_paragraph(tmp_path: Path) -> None:
    """Two corpora that each name a credit: one paragraph each, as info.json lists them."""
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("Hi.\tCiao.\tAlice's corpus, CC0.\n", encoding="utf-8")
    b.write_text("Yes.\tSì.\tBob's corpus, CC-BY 4.0.\n", encoding="utf-8")
    assert run_attribution([str(a), str(b)]) == "Alice's corpus, CC0.\nBob's corpus, CC-BY 4.0."
    # inherited from a warm start: the same credits are not repeated
    both = "Alice's corpus, CC0.\nBob's corpus, CC-BY 4.0."
    assert run_attribution([str(a), str(b)], None, both) == both
