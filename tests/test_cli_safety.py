"""What a user gives the CLI is never lost, and a request it cannot serve is one line (issue 53).

``translate -i F -o F`` (however F is spelled) keeps F whole until the translation is done,
whatever stops the run; a .txt's byte-order mark survives; ``-i DIR``, ``--model RUN`` and a
beam wider than the machine holds are each one line that says what to do instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from attenzione.cli import app
from attenzione.translator.translator import Translator
from process_helpers import as_terminal_job
from tiny_model import tiny_translator

LINES = ["the old dog is there", "", "the red cat is here ."]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("safety") / "tiny"
    tiny_translator().save_pretrained(path)
    return path


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _one_line_error(res: Result, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, res.output
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.part"))


# ---------------------------------------------------------------- 1: -i F -o F never destroys F
def _spellings(tmp_path: Path) -> dict[str, tuple[Path, Path]]:
    """(input, output) naming the same file three ways."""
    (tmp_path / "sub").mkdir(exist_ok=True)
    f = tmp_path / "doc.txt"
    link = tmp_path / "link.txt"
    if not link.is_symlink():
        link.symlink_to(f)
    return {
        "same path": (f, f),
        "another spelling": (f, tmp_path / "sub" / ".." / "doc.txt"),
        "a symlink": (f, link),
    }


@pytest.mark.parametrize("spelling", ["same path", "another spelling", "a symlink"])
def test_a_run_stopped_midway_leaves_the_input_output_whole(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    src, out = _spellings(tmp_path)[spelling]
    original = ("\n".join(LINES * 20) + "\n").encode("utf-8")
    src.write_bytes(original)
    real = Translator.translate_iter

    def stopped_after_two(self: Translator, *args: object, **kw: object) -> Iterator[object]:
        for i, result in enumerate(real(self, *args, **kw)):  # type: ignore[arg-type]
            if i == 2:
                raise KeyboardInterrupt  # Ctrl-C, two lines written
            yield result

    monkeypatch.setattr(Translator, "translate_iter", stopped_after_two)
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(out))
    assert res.exit_code == 130 and "interrupted" in res.output, res.output
    assert src.read_bytes() == original
    assert _parts(tmp_path) == []  # the temporary output went too

    monkeypatch.setattr(Translator, "translate_iter", real)
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    done = src.read_text(encoding="utf-8").splitlines()
    assert len(done) == len(LINES) * 20 and done[1] == "" and done[0] != LINES[0]
    assert (tmp_path / "link.txt").is_symlink()  # a link written through stays a link
    assert _parts(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_translate_killed_by_a_signal_leaves_f_as_it_was(
    model: Path, tmp_path: Path, signum: int
) -> None:
    src = tmp_path / "big.txt"
    original = ("\n".join(["the old dog is there", "the red cat is here ."] * 6000) + "\n").encode()
    src.write_bytes(original)
    out = src if signum == signal.SIGINT else tmp_path / "link.txt"
    if out != src:
        out.symlink_to(src)
    cmd = [sys.executable, "-m", "attenzione", "translate", "--model", str(model)]
    cmd += ["-i", str(src), "-o", str(out), "--threads", "1", "--workers", "1"]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=as_terminal_job,  # noqa: PLW1509 (only signal calls: safe between fork and exec)
    )
    try:
        deadline = time.monotonic() + 600  # a guard against a hang, not a timing assertion
        while not any(p.stat().st_size for p in _parts(tmp_path)):  # lines are being written
            assert proc.poll() is None, proc.communicate()[0].decode()
            assert time.monotonic() < deadline, "no output was ever written"
            time.sleep(0.05)
        assert src.read_bytes() == original  # F is untouched while the run writes
        proc.send_signal(signum)
        output = proc.communicate(timeout=600)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, output
    assert "Traceback" not in output and "interrupted" in output, output
    assert src.read_bytes() == original
    assert _parts(tmp_path) == []


def test_every_translate_output_is_renamed_into_place(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only -i F -o F: a stopped run leaves any earlier output file as it was."""
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out.write_text("last week's translation\n", encoding="utf-8")

    def broken(self: Translator, *args: object, **kw: object) -> Iterator[object]:
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(Translator, "translate_iter", broken)
    assert _run("translate", "--model", str(model), "-i", str(src), "-o", str(out)).exit_code == 130
    assert out.read_text(encoding="utf-8") == "last week's translation\n"


def test_an_output_that_is_not_a_file_is_written_to_not_replaced(
    model: Path, tmp_path: Path
) -> None:
    """A named pipe (as /dev/stdout or /dev/null): renaming over it would replace it."""
    src, fifo = tmp_path / "in.txt", tmp_path / "pipe"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(fifo))
    reader.join(timeout=600)
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and len(got[0].decode("utf-8").splitlines()) == len(LINES)


# ---------------------------------------------------------------- 12: the small ones
def test_an_input_directory_is_called_a_directory(model: Path, tmp_path: Path) -> None:
    res = _run("translate", "--model", str(model), "-i", str(tmp_path))
    _one_line_error(res, str(tmp_path), "is a directory")
    assert "does not exist" not in res.output
    res = _run("translate", "--model", str(model), "-i", str(tmp_path), "-o", str(tmp_path / "x"))
    _one_line_error(res, "is a directory")
    res = _run("evaluate", "--model", str(model), "--data", str(tmp_path))
    _one_line_error(res, "--data", "is a directory")


def test_a_txt_files_byte_order_mark_is_kept(model: Path, tmp_path: Path) -> None:
    src, out = tmp_path / "bom.txt", tmp_path / "bom.out.txt"
    src.write_bytes(b"\xef\xbb\xbfthe old dog is there\r\n\r\nthe red cat is here .\r\n")
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\xef\xbb\xbf") == 1
    assert data.count(b"\r\n") == 3
    res = CliRunner().invoke(app, ["translate", "--model", str(model), "-i", str(src)])
    assert res.stdout_bytes.startswith(b"\xef\xbb\xbf"), res.stdout_bytes[:10]
    plain = tmp_path / "plain.txt"  # and none is added where there was none
    plain.write_bytes(b"the old dog is there\n")
    res = _run("translate", "--model", str(model), "-i", str(plain), "-o", str(out))
    assert res.exit_code == 0 and not out.read_bytes().startswith(b"\xef\xbb\xbf")


def test_the_count_of_translations_leaves_blank_lines_out(model: Path, tmp_path: Path) -> None:
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("\n".join(LINES * 3) + "\n", encoding="utf-8")  # 9 lines, 3 blank
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert f"wrote 6 translations (9 lines) to {out}" in res.output


def test_a_progress_bar_never_goes_to_a_log(model: Path, tmp_path: Path) -> None:
    """CliRunner's stderr is not a terminal, as a log file is not."""
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("\n".join(LINES * 40) + "\n", encoding="utf-8")
    res = _run("translate", "--model", str(model), "-i", str(src), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "\r" not in res.output and "line/s" not in res.output, res.output


def test_a_training_run_as_model_suggests_its_best(model: Path, tmp_path: Path) -> None:
    run = tmp_path / "mine"
    for part in ("data", "src_tokenizer", "tgt_tokenizer"):  # what a run holds besides
        (run / part).mkdir(parents=True)
    shutil.copytree(model, run / "best")  # the model files live in best/ (and last/)
    for command in (["translate", "hello"], ["attention", "hello", "-o", str(tmp_path / "a")]):
        res = _run(command[0], "--model", str(run), *command[1:])
        _one_line_error(res, f"--model {run / 'best'}", "training run")
    res = _run("evaluate", "--model", str(run), "--data", str(tmp_path / "t.tsv"))
    _one_line_error(res, f"--model {run / 'best'}")


# ---------------------------------------------------------------- 2: a beam too wide
@pytest.mark.parametrize(
    "args",
    [
        ["translate", "--beam", "50000", "word"],
        ["translate", "--n-best", "50000", "word"],
        ["translate", "--beam", "50000", "-i", "{tmp}/in.txt", "-o", "{tmp}/out.txt"],
        ["evaluate", "--beam", "50000", "--data", "{tmp}/test.tsv"],
        ["attention", "--beam", "50000", "word", "-o", "{tmp}/maps"],
    ],
    ids=["translate", "n-best", "translate-file", "evaluate", "attention"],
)
def test_a_beam_wider_than_the_machine_holds_is_one_line_before_any_work(
    model: Path, tmp_path: Path, args: list[str]
) -> None:
    (tmp_path / "in.txt").write_text("the old dog\n" * 3, encoding="utf-8")
    (tmp_path / "test.tsv").write_text("the old dog\til cane\n", encoding="utf-8")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = _run(argv[0], "--model", str(model), *argv[1:])
    _one_line_error(res, "50000", "at most")
    made = {p.name for p in tmp_path.iterdir()} - {"in.txt", "test.tsv"}
    assert made == set(), made  # no output, hypotheses or maps: refused before the work
