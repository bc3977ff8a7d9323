"""End-to-end training on a toy corpus: train, stop, resume, translate, evaluate, torchrun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione.atomic import old_twin
from attenzione.cli import app
from attenzione.config import search_config
from attenzione.training.schedule import cooldown_factor, inverse_sqrt_lr
from attenzione.training.trainer import train
from attenzione.translator.model_dir import find_model_dir, load_model, write_model_dir
from attenzione.translator.translator import Translator
from serve_helpers import free_port
from toy_corpus import toy_train_config, write_toy_corpus

QUIET = {"log": lambda *a, **k: None}


_cfg = toy_train_config


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("corpus") / "toy.tsv")


@pytest.fixture(scope="module")
def trained_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained 150 steps then resumed to 500 (shared by several tests)."""
    out = tmp_path_factory.mktemp("run") / "toy"
    train(_cfg(corpus, out, max_steps=150, eval_every=100), **QUIET)
    train(_cfg(corpus, out, max_steps=500, eval_every=100), resume=True, **QUIET)
    return out


def test_run_directory_has_everything(trained_run: Path) -> None:
    for name in ("data/train.tsv", "data/dev.tsv", "data/test.tsv", "metrics.jsonl", "curves.png"):
        assert (trained_run / name).is_file(), name
    for ckpt in ("last", "best"):
        for name in (
            "config.json",
            "model.safetensors",
            "src_tokenizer",
            "tgt_tokenizer",
            "info.json",
        ):
            assert (trained_run / ckpt / name).exists(), f"{ckpt}/{name}"
    assert (trained_run / "last" / "training_state.pt").is_file()
    assert not (trained_run / "best" / "training_state.pt").exists()


def test_splits_are_disjoint_by_sentence(trained_run: Path) -> None:
    def sides(name: str) -> tuple[set[str], set[str]]:
        rows = [line.split("\t") for line in (trained_run / "data" / name).read_text().splitlines()]
        return {r[0] for r in rows}, {r[1] for r in rows}

    train_en, train_it = sides("train.tsv")
    for held_out in ("dev.tsv", "test.tsv"):
        en, it = sides(held_out)
        assert en and not en & train_en
        assert not it & train_it


def test_training_learns_and_resume_continues_the_step_count(trained_run: Path) -> None:
    records = [
        json.loads(line) for line in (trained_run / "metrics.jsonl").read_text().splitlines()
    ]
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    evals = [r for r in records if "dev_bleu" in r]
    assert losses[-1] < 0.6 * losses[0]
    assert [r["step"] for r in evals] == [100, 150, 200, 300, 400, 500]  # resumed at 150, not at 0
    info = json.loads((trained_run / "last" / "info.json").read_text())
    # the toy corpus names no source: nobody is credited (and certainly not Tatoeba)
    assert info["step"] == 500 and info["attribution"] is None
    # the toy targets have no numbers to say how they write them: left as the model writes
    assert info["number_format"] == "keep"
    # the languages it was told, as the service reads them (serve.language)
    assert (info["source_language"], info["target_language"]) == ("en", "it")


def test_trained_model_translates_the_toy_language(trained_run: Path) -> None:
    tr = Translator.from_pretrained(trained_run / "best")
    sources = ["The red cat is here.", "The old house is there.", "   ", ""]
    out = [r.text for r in tr.translate(sources, search=search_config(4))]
    assert out[2:] == ["", ""]
    assert out[0].startswith("Il gatto")
    assert out[1].startswith("La casa")


def test_cli_translate_and_evaluate_on_the_run(trained_run: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        app, ["translate", "--model", str(trained_run / "best"), "The big dog is here."]
    )
    assert res.exit_code == 0, res.output
    assert res.output.strip().startswith("Il cane")
    test_tsv = tmp_path / "test.tsv"
    shutil.copy(trained_run / "data" / "test.tsv", test_tsv)
    res = runner.invoke(
        app, ["evaluate", "--model", str(trained_run / "best"), "--data", str(test_tsv), "--json"]
    )
    assert res.exit_code == 0, res.output
    scores = json.loads(res.output[res.output.index("{") :])
    assert 0.0 <= scores["bleu"] <= 100.0 + 1e-9 and scores["chrf"] > 20.0
    assert "BLEU" not in scores["bleu_signature"] or "nrefs:1" in scores["bleu_signature"]
    assert (tmp_path / "test.tsv.hyp.txt").read_text().count("\n") == scores["n_sentences"]
    assert scores["beam"] == 4 and scores["terms"]["number-coverage"] == 0.5
    # the text steps it ran: the model's own (a run records none: every step)
    assert scores["steps"] == list(Translator.from_pretrained(trained_run / "best").pipeline.names)
    # several references per source: a repeated source is translated once
    lines = test_tsv.read_text(encoding="utf-8").splitlines()
    src0 = lines[0].split("\t")[0]
    test_tsv.write_text("\n".join([*lines, f"{src0}\tUn'altra traduzione."]) + "\n")
    res = runner.invoke(
        app,
        ["evaluate", "--model", str(trained_run / "best"), "--data", str(test_tsv), "--json"]
        + ["--all-references"],
    )
    assert res.exit_code == 0, res.output
    multi = json.loads(res.output[res.output.index("{") :])
    assert multi["pairs"] == len(lines) + 1
    assert multi["n_sentences"] == len({line.split("\t")[0] for line in lines})
    assert "sentences" not in multi  # said once, as n_sentences
    assert "nrefs:var" in multi["bleu_signature"]
    assert multi["bleu"] >= scores["bleu"] - 1e-9
    res = runner.invoke(
        app,
        ["evaluate", "--model", str(trained_run / "best"), "--data", str(test_tsv), "--json"]
        + ["--beam", "1"],
    )
    greedy = json.loads(res.output[res.output.index("{") :])
    assert greedy["beam"] == 1 and greedy["terms"] == {}  # no search to rank
    # --compare-raw scores the model alone beside it, with no step and no term
    res = runner.invoke(
        app,
        ["evaluate", "--model", str(trained_run / "best"), "--data", str(test_tsv), "--json"]
        + ["--compare-raw"],
    )
    assert res.exit_code == 0, res.output
    both = json.loads(res.output[res.output.index("{") :])
    assert both["raw"]["steps"] == [] and both["raw"]["terms"] == {}
    assert both["steps"] == scores["steps"]
    assert Path(both["raw"]["hypotheses"]).name == "test.tsv.hyp.raw.txt"


@pytest.mark.parametrize("sampling", [0.0, 0.2], ids=["best-pieces", "subword-sampling"])
def test_resume_equals_uninterrupted(corpus: Path, tmp_path: Path, sampling: float) -> None:
    """Stopping at step 20 and resuming to 40 performs exactly the updates of a straight run,
    also when each batch's sources are segmented afresh at random (--subword-sampling)."""
    straight = tmp_path / "straight"
    train(_cfg(corpus, straight, max_steps=40, subword_sampling=sampling), **QUIET)
    split = tmp_path / "split"
    train(_cfg(corpus, split, max_steps=20, subword_sampling=sampling), **QUIET)
    train(_cfg(corpus, split, max_steps=40, subword_sampling=sampling), resume=True, **QUIET)
    a = load_model(straight / "last").state_dict()
    b = load_model(split / "last").state_dict()
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=1e-6, msg=name)


def test_existing_run_is_not_overwritten_without_resume(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    train(_cfg(corpus, out, max_steps=2), **QUIET)
    with pytest.raises(ValueError, match="--resume"):
        train(_cfg(corpus, out, max_steps=4), **QUIET)


def test_resume_without_a_checkpoint_is_a_clear_error(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(_cfg(corpus, tmp_path / "nothing", max_steps=4), resume=True, **QUIET)


def test_interrupted_checkpoint_swap_leaves_a_complete_checkpoint(
    trained_run: Path, tmp_path: Path
) -> None:
    """A kill between the two renames leaves only .NAME.old: it is still found and loadable."""
    tr = Translator.from_pretrained(trained_run / "best")
    target = tmp_path / "last"
    write_model_dir(target, tr.model, tr.src_tokenizer, tr.tgt_tokenizer, info={"step": 1})
    target.rename(old_twin(target))  # the state right after "NAME -> .NAME.old"
    (tmp_path / ".last.tmp-crashed").mkdir()  # a half-written temp dir from the killed save
    found = find_model_dir(target)
    assert found == old_twin(target)
    Translator.from_pretrained(found).translate("The cat is here.")
    # The next save completes the swap and cleans up.
    write_model_dir(target, tr.model, tr.src_tokenizer, tr.tgt_tokenizer, info={"step": 2})
    assert find_model_dir(target) == target and not old_twin(target).exists()


def test_schedule_warms_up_then_decays() -> None:
    lrs = [inverse_sqrt_lr(s, peak=1e-3, warmup=100) for s in (1, 50, 100, 400)]
    assert lrs[0] == pytest.approx(1e-5)
    assert lrs[1] == pytest.approx(5e-4)
    assert lrs[2] == pytest.approx(1e-3)
    assert lrs[3] == pytest.approx(5e-4)


def test_cooldown_holds_the_rate_then_brings_it_linearly_to_zero() -> None:
    assert [cooldown_factor(u, 0.2) for u in (0.0, 0.5, 0.8)] == pytest.approx([1.0, 1.0, 1.0])
    assert cooldown_factor(0.9, 0.2) == pytest.approx(0.5)
    assert cooldown_factor(1.0, 0.2) == 0.0 and cooldown_factor(1.3, 0.2) == 0.0
    assert cooldown_factor(0.99, 0.0) == 1.0  # 0: no cool-down
    assert cooldown_factor(0.25, 1.0) == pytest.approx(0.75)  # 1: from the first step


def test_a_run_with_a_cooldown_logs_the_cooled_rate_and_the_gradient_norm(
    corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "cool"
    train(_cfg(corpus, out, max_steps=120, cooldown=0.5, clip_norm=0.5), **QUIET)
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    at = {r["step"]: r for r in logged if "lr" in r}  # steps 1, 50 and 100
    # the first half of the budget keeps the plain schedule
    for step in (1, 50):
        assert at[step]["lr"] == pytest.approx(inverse_sqrt_lr(step, peak=3e-3, warmup=30))
    # step 100 is taken with 99 of the 120 steps spent: 21/120 left of a 60-step ramp
    plain = inverse_sqrt_lr(100, peak=3e-3, warmup=30)
    assert at[100]["lr"] == pytest.approx(plain * (21 / 120) / 0.5)
    assert all(r["grad_norm"] > 0 for r in at.values())  # the norm before clipping
    assert any(r["clipped"] > 0 for r in at.values())  # a clip of 0.5 does act on this run

    unclipped = tmp_path / "unclipped"
    train(_cfg(corpus, unclipped, max_steps=50, clip_norm=0.0), **QUIET)
    logged = [json.loads(line) for line in (unclipped / "metrics.jsonl").read_text().splitlines()]
    records = [r for r in logged if "lr" in r]
    assert records and all(r["grad_norm"] > 0 and r["clipped"] == 0 for r in records)


def test_a_cooldown_needs_a_budget_to_count_down(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--cooldown"):
        train(_cfg(corpus, tmp_path / "r", epochs=1, cooldown=0.2), **QUIET)
    res = CliRunner().invoke(
        app,
        ["train", "--data", str(corpus), "--out", str(tmp_path / "r2")]
        + ["--max-steps", "1", "--cooldown", "1.5"],
    )
    assert res.exit_code == 2 and "--cooldown" in res.output and "Traceback" not in res.output


def test_cli_train_reports_bad_input_without_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "train",
            "--data",
            str(tmp_path / "missing.tsv"),
            "--out",
            str(tmp_path / "r"),
            "--max-steps",
            "1",
        ],
    )
    assert res.exit_code == 2
    assert "missing.tsv" in res.output and "Traceback" not in res.output
    res = runner.invoke(
        app,
        [
            "train",
            "--data",
            str(tmp_path / "x.tsv"),
            "--out",
            str(tmp_path / "r"),
            "--preset",
            "huge",
            "--max-steps",
            "1",
        ],
    )
    assert res.exit_code == 2 and "preset" in res.output
    res = runner.invoke(
        app,
        ["train", "--data", str(tmp_path / "x.tsv"), "--out", str(tmp_path / "r")]
        + ["--src-lang", "it en", "--max-steps", "1"],
    )
    assert res.exit_code == 2 and "language code" in res.output and "Traceback" not in res.output


def test_a_malformed_corpus_line_stops_training_unless_skipping_is_asked(
    corpus: Path, tmp_path: Path
) -> None:
    lines = corpus.read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "bad.tsv"
    bad.write_text("\n".join([*lines[:40], "a line with no tab", *lines[40:]]) + "\n")
    runner = CliRunner()
    args = ["train", "--data", str(bad), "--preset", "tiny", "--dev-size", "8"]
    args += ["--test-size", "8", "--vocab-size", "48", "--max-steps", "2", "--no-progress"]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "strict")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{bad}:41: expected 2 or 3 tab-separated columns, found 1" in res.output
    assert not (tmp_path / "strict" / "data" / "train.tsv").exists()  # nothing half-prepared

    logged: list[str] = []
    cfg = _cfg(bad, tmp_path / "lenient", max_steps=2, skip_bad_lines=True)
    train(cfg, log=logged.append)
    assert any("skipped 1 malformed lines" in m for m in logged)
    kept = (tmp_path / "lenient" / "data" / "train.tsv").read_text(encoding="utf-8")
    assert "a line with no tab" not in kept


def test_a_corpus_too_small_for_the_held_out_sets_is_a_clear_error(
    corpus: Path, tmp_path: Path
) -> None:
    n = len(corpus.read_text(encoding="utf-8").splitlines())
    res = CliRunner().invoke(
        app,
        ["train", "--data", str(corpus), "--out", str(tmp_path / "r"), "--preset", "tiny"]
        + ["--dev-size", str(n), "--test-size", str(n), "--max-steps", "1"],
    )
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "leave 0 for training" in res.output and "--dev-size" in res.output


def test_torchrun_two_processes(corpus: Path, tmp_path: Path) -> None:
    """DDP on gloo with 2 ranks: trains, only rank 0 writes, and the run resumes."""
    out = tmp_path / "ddp"
    base = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),  # a fixed port fails when another run of the suite holds it
        "-m",
        "attenzione",
        "train",
        "--data",
        str(corpus),
        "--out",
        str(out),
        "--preset",
        "tiny",
        "--vocab-size",
        "48",
        "--max-tokens",
        "400",
        "--dev-size",
        "8",
        "--test-size",
        "8",
        "--threads",
        "1",
        "--no-progress",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # --max-steps a multiple of --eval-every: the end of the run must not evaluate again on
    # one rank only (it used to: rank 1 entered the final collective alone and crashed)
    first = subprocess.run(
        [*base, "--max-steps", "6", "--eval-every", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    second = subprocess.run(
        [*base, "--max-steps", "10", "--resume"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    info = json.loads((out / "last" / "info.json").read_text())
    assert info["step"] == 10
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    evals = [r["step"] for r in records if "dev_bleu" in r]
    assert evals == [3, 6, 9, 10]  # one writer: each evaluation logged exactly once


def test_sigterm_saves_last_and_the_run_resumes(corpus: Path, tmp_path: Path) -> None:
    """`kill` (SIGTERM) finishes the step, saves last/ and exits; --resume continues it."""
    import signal
    import subprocess
    import time

    out = tmp_path / "term"
    cmd = [
        sys.executable,
        "-m",
        "attenzione",
        "train",
        "--data",
        str(corpus),
        "--out",
        str(out),
        "--preset",
        "tiny",
        "--vocab-size",
        "48",
        "--max-tokens",
        "400",
        "--dev-size",
        "8",
        "--test-size",
        "8",
        "--threads",
        "1",
        "--no-progress",
    ]
    proc = subprocess.Popen([*cmd, "--max-steps", "1000000"], stderr=subprocess.PIPE, text=True)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        metrics.is_file() and "train_loss" in metrics.read_text()
    ):
        time.sleep(0.2)  # wait until training is under way (step 1 is logged)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "interrupted by SIGTERM" in err
    step = json.loads((out / "last" / "info.json").read_text())["step"]
    assert step >= 1
    res = subprocess.run(
        [*cmd, "--resume", "--max-steps", str(step + 3)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert f"resumed {out / 'last'} at step {step}" in res.stderr
    assert json.loads((out / "last" / "info.json").read_text())["step"] == step + 3


def test_glove50_preset_trains_from_a_glove_file_and_reports_coverage(
    corpus: Path, tmp_path: Path
) -> None:
    """The GloVe design (``glove50``) on the toy corpus: d_model = the GloVe size, the source
    embedding starts from (and, frozen, keeps) the GloVe rows, and the coverage is reported."""
    words = ["the", "cat", "dog", "red", "big", "is", "here", "."]
    g = torch.Generator().manual_seed(0)
    vectors = torch.randn(len(words), 12, generator=g)
    glove = tmp_path / "glove.toy.12d.txt"
    glove.write_text(
        "".join(
            f"{w} {' '.join(f'{x:.5f}' for x in v.tolist())}\n"
            for w, v in zip(words, vectors, strict=True)
        )
    )
    lines: list[str] = []
    out = tmp_path / "g50"
    train(
        _cfg(
            corpus,
            out,
            preset="glove50",
            glove=str(glove),
            freeze_embeddings=True,
            max_steps=20,
            vocab_size=40,
        ),
        log=lambda *a, **k: lines.append(" ".join(map(str, a))),
    )
    covered = [line for line in lines if line.startswith("GloVe covers")]
    assert len(covered) == 1, lines
    info = json.loads((out / "last" / "info.json").read_text())
    assert covered[0] in info["notes"]
    tr = Translator.from_pretrained(out / "last")
    assert tr.model.config.d_model == 12 and tr.model.config.n_heads * tr.model.config.d_head != 12
    src_tok = tr.src_tokenizer
    cat = src_tok.encode("cat")[0]
    weight = tr.model.src_embed.weight
    torch.testing.assert_close(weight[cat], vectors[words.index("cat")], atol=1e-4, rtol=0)


def test_snapshots_are_kept_and_averaged_into_a_model(corpus: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from attenzione.training.averaging import average_weights, snapshot_steps

    out = tmp_path / "run"
    train(_cfg(corpus, out, max_steps=40, eval_every=10, keep_snapshots=3), **QUIET)
    assert snapshot_steps(out) == [20, 30, 40]  # one per save of last/, the last three kept
    res = CliRunner().invoke(app, ["average", str(out), "--last", "2", "--out", str(out / "avg")])
    assert res.exit_code == 0, res.output
    assert "steps 30, 40" in res.output
    a = load_file(str(out / "snapshots" / "step-30.safetensors"))
    b = load_file(str(out / "snapshots" / "step-40.safetensors"))
    averaged = load_model(out / "avg").state_dict()
    for name, tensor in a.items():
        torch.testing.assert_close(averaged[name], (tensor + b[name]) / 2)
    assert not torch.equal(
        a["src_embed.embedding.weight"], b["src_embed.embedding.weight"]
    )  # they did differ
    info = json.loads((out / "avg" / "info.json").read_text())
    assert info["averaged_steps"] == [30, 40] and info["dev_bleu_greedy"] is None
    # a model directory like any other: it loads with its tokenizers and decodes, and carries
    # the run's word lists (those of last/)
    avg = Translator.from_pretrained(out / "avg")
    assert len(avg.translate(["ab", "ba"])) == 2
    last = Translator.from_pretrained(out / "last")
    assert avg.known_words == last.known_words and avg.known_words
    assert avg.translated_words == last.translated_words
    # the library function gives the same mean
    mean = average_weights([out / "snapshots" / f"step-{s}.safetensors" for s in (30, 40)])
    torch.testing.assert_close(
        mean["src_embed.embedding.weight"], averaged["src_embed.embedding.weight"]
    )


def test_average_errors_are_one_line(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    train(_cfg(corpus, out, max_steps=10, eval_every=10), **QUIET)
    runner = CliRunner()
    res = runner.invoke(app, ["average", str(out), "--out", str(tmp_path / "avg")])
    assert res.exit_code == 2 and "holds no snapshots" in res.output, res.output
    res = runner.invoke(app, ["average", str(tmp_path / "nothing"), "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "nothing a training run?" in res.output, res.output
    train(_cfg(corpus, out, max_steps=20, eval_every=10, keep_snapshots=2), resume=True, **QUIET)
    res = runner.invoke(app, ["average", str(out), "--steps", "5,20", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "no snapshot of step 5" in res.output, res.output
    res = runner.invoke(app, ["average", str(out), "--steps", "x", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--steps takes step numbers" in res.output, res.output
    assert "Traceback" not in res.output


def test_average_blends_the_mean_with_the_model_it_started_from(
    corpus: Path, tmp_path: Path
) -> None:
    """--blend-with M --blend-weight W writes (1 - W) * mean + W * M, and says so in info.json;
    a model of another vocabulary or shape, or a weight outside 0-1, is a one-line error."""
    from safetensors.torch import load_file

    out = tmp_path / "run"
    train(_cfg(corpus, out, max_steps=30, eval_every=10, keep_snapshots=2), **QUIET)
    start = tmp_path / "start"
    train(_cfg(corpus, start, max_steps=10, eval_every=10), **QUIET)
    shutil.copytree(out / "src_tokenizer", start / "last" / "src_tokenizer", dirs_exist_ok=True)
    shutil.copytree(out / "tgt_tokenizer", start / "last" / "tgt_tokenizer", dirs_exist_ok=True)
    runner = CliRunner()
    args = ["average", str(out), "--last", "2", "--blend-with", str(start / "last")]
    res = runner.invoke(app, [*args, "--blend-weight", "0.25", "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "moved 0.25 of the way to" in res.output
    a = load_file(str(out / "snapshots" / "step-20.safetensors"))
    b = load_file(str(out / "snapshots" / "step-30.safetensors"))
    m = load_file(str(start / "last" / "model.safetensors"))
    blended = load_model(tmp_path / "b").state_dict()
    name = "src_embed.embedding.weight"
    assert not torch.equal(m[name], (a[name] + b[name]) / 2)  # the two did differ
    for k, tensor in a.items():
        torch.testing.assert_close(blended[k], 0.75 * (tensor + b[k]) / 2 + 0.25 * m[k])
    info = json.loads((tmp_path / "b" / "info.json").read_text())
    assert info["blended_with"] == {"model": str(start / "last"), "weight": 0.25}
    assert info["averaged_steps"] == [20, 30]
    # weight 1 is the other model's weights
    res = runner.invoke(app, [*args, "--blend-weight", "1", "--out", str(tmp_path / "one")])
    assert res.exit_code == 0, res.output
    torch.testing.assert_close(load_model(tmp_path / "one").state_dict()[name], m[name])
    res = runner.invoke(app, [*args, "--blend-weight", "1.5", "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "between 0 and 1" in res.output, res.output
    # a model with its own tokenizers (each run trains its own)
    other = tmp_path / "other"
    train(_cfg(corpus, other, max_steps=10, eval_every=10, vocab_size=50), **QUIET)
    res = runner.invoke(
        app,
        ["average", str(out), "--blend-with", str(other / "last"), "--out", str(tmp_path / "d")],
    )
    assert res.exit_code == 2 and "other tokenizers" in res.output, res.output
    res = runner.invoke(
        app,
        ["average", str(out), "--blend-with", str(tmp_path / "nope"), "--out", str(tmp_path / "e")],
    )
    assert res.exit_code == 2 and "not a model directory" in res.output, res.output
    assert "Traceback" not in res.output


def test_subword_sampling_feeds_other_segmentations_of_the_same_sources(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --subword-sampling the batches' sources are other segmentations of the same
    text, differing from batch to batch; the targets keep the best segmentation."""
    from attenzione.training import trainer as trainer_mod

    seen: list[list[tuple[list[int], list[int]]]] = []
    real_collate = trainer_mod.collate

    def spy(pairs, **kw):  # type: ignore[no-untyped-def]
        seen.append([(list(s), list(t)) for s, t in pairs])
        return real_collate(pairs, **kw)

    monkeypatch.setattr(trainer_mod, "collate", spy)
    out = tmp_path / "run"
    train(_cfg(corpus, out, max_steps=6, subword_sampling=0.1), **QUIET)
    tr = Translator.from_pretrained(out / "last")
    rows = [line.split("\t") for line in (out / "data/train.tsv").read_text().splitlines()]
    texts = {s for s, _ in rows}
    best = {tuple(tr.src_tokenizer.encode(s)) for s in texts}
    targets = {tuple(tr.tgt_tokenizer.encode(t)) for _, t in rows}
    sources = [tuple(s) for batch in seen for s, _ in batch]
    assert {tr.src_tokenizer.decode(s) for s in sources} <= texts  # the same sentences
    assert sum(s not in best for s in sources) > len(sources) // 4  # mostly re-segmented
    assert all(tuple(t) in targets for batch in seen for _, t in batch)  # targets as they were


def test_subword_sampling_needs_a_subword_vocabulary(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--subword-sampling needs a SentencePiece"):
        train(
            _cfg(corpus, tmp_path / "g", preset="glove50", max_steps=2, subword_sampling=0.5),
            **QUIET,
        )


def test_reverse_reads_every_corpus_the_other_way_and_holds_out_the_same_pairs(
    corpus: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.tsv"
    extra.write_text("The dog sleeps.\tIl cane dorme.\n", encoding="utf-8")
    dev2 = tmp_path / "dev2.tsv"
    dev2.write_text("The cat eats.\tIl gatto mangia.\n", encoding="utf-8")
    common = dict(max_steps=1, extra_data=(f"{extra}:2",), extra_dev=(f"two={dev2}",))
    fwd, rev = tmp_path / "fwd", tmp_path / "rev"
    train(_cfg(corpus, fwd, **common), **QUIET)
    train(_cfg(corpus, rev, reverse=True, src_lang="it", tgt_lang="en", **common), **QUIET)

    def rows(run: Path, name: str) -> list[tuple[str, str]]:
        lines = (run / "data" / name).read_text(encoding="utf-8").splitlines()
        return [(a, b) for a, b in (line.split("\t") for line in lines)]

    for name in ("dev.tsv", "test.tsv", "dev-two.tsv"):
        assert rows(rev, name) == [(t, s) for s, t in rows(fwd, name)], name
    assert ("Il cane dorme.", "The dog sleeps.") in rows(rev, "train.tsv")
    assert ("The dog sleeps.", "Il cane dorme.") not in rows(rev, "train.tsv")
    info = json.loads((rev / "last" / "info.json").read_text(encoding="utf-8"))
    assert (info["source_language"], info["target_language"]) == ("it", "en")
    assert any("--reverse" in note for note in info["notes"])
