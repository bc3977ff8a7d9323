"""Ctrl-C stops ``attenzione translate`` at once, in one line, from every process (issue 53, 9).

A terminal sends SIGINT to the whole foreground process group: the command and its worker
processes. Each worker used to print a ~110-line ``KeyboardInterrupt`` traceback when the
signal came while it started (from inside ``import torch``), and the command, leaving its pool
of workers, waited for the batches handed out to them (7.6 s inside a chunk; 17.5 s measured
on a loaded 2-core machine). The tests run the command as a user does, in a process group of its
own, send SIGINT to the group as a terminal would, and check the exit: status 130, one line,
no traceback, no worker left running. They do not assert on time beyond a generous bound: the
machine may be busy.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import attenzione.cli
from process_helpers import as_terminal_job
from tiny_model import WORDS, tiny_translator

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or not hasattr(os, "killpg"),
    reason="a process group and /proc (Linux) to see the workers",
)

BOUND = 15.0  # seconds from SIGINT to exit: ~1 s measured, the bound is for a busy machine


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("interrupt") / "tiny"
    tiny_translator(seed=4).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def long_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60,000 different lines: minutes of work, so the command is always busy when stopped."""
    path = tmp_path_factory.mktemp("interrupt") / "long.txt"
    words = itertools.cycle(WORDS)
    lines = (" ".join(itertools.islice(words, 3 + i % 9)) for i in range(60_000))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _children(pid: int) -> list[int]:
    try:
        return [int(n) for n in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie waiting to be reaped does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _interrupt(args: list[str], when: str) -> tuple[int, str, list[int]]:
    """Run ``python -m attenzione ARGS``, send SIGINT to its process group ``when`` it has
    written a translation ("output") or has started its worker processes ("workers"); return
    its status, its stderr and the processes it had started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "attenzione", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_terminal_job,  # noqa: PLW1509 (only signal calls: safe between fork and exec)
    )
    started = time.monotonic()
    try:
        if when == "output":
            assert proc.stdout is not None
            assert proc.stdout.readline(), "the command wrote nothing"
        else:  # the workers (and multiprocessing's resource tracker) have been spawned
            while len(_children(proc.pid)) < 3 and proc.poll() is None:
                assert time.monotonic() - started < 120, "no worker process started"
                time.sleep(0.02)
            time.sleep(0.3)  # each is now importing torch
        children = _children(proc.pid)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=BOUND + 60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < BOUND, f"took {took:.1f} s to stop"
    return proc.returncode, err.decode("utf-8", "replace"), children


def _check_quiet_stop(code: int, err: str, children: list[int]) -> None:
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert [line for line in err.splitlines() if line.strip()] == ["interrupted"], err
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(pid) for pid in children), "a worker process outlived the command"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_inside_a_chunk_stops_at_once_in_one_line(
    model: Path, long_input: Path, workers: str
) -> None:
    args = ["translate", "--model", str(model), "-i", str(long_input), "--workers", workers]
    _check_quiet_stop(*_interrupt(args, "output"))


def test_ctrl_c_while_the_workers_start_prints_no_traceback(model: Path, long_input: Path) -> None:
    args = ["translate", "--model", str(model), "-i", str(long_input), "--workers", "2"]
    code, err, children = _interrupt(args, "workers")
    assert len(children) >= 2
    _check_quiet_stop(code, err, children)


def test_an_interrupt_no_command_caught_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Typer turns a KeyboardInterrupt that leaves a command into a silent exit 130: the
    entry point says why, in the same words as the commands."""
    import typer

    app = typer.Typer()

    @app.command()
    def stop() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sys, "argv", ["attenzione"])
    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as info:
            attenzione.cli.main(app)
    finally:
        signal.signal(signal.SIGINT, previous)  # main leaves a quick exit for a second Ctrl-C
    assert info.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_the_commands_own_answer_to_an_interrupt_is_not_doubled(
    model: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``translate`` answers Ctrl-C itself (one line): the entry point adds nothing."""
    from attenzione.translator.translator import Translator

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Translator, "from_pretrained", interrupted)
    monkeypatch.setattr(sys, "argv", ["attenzione", "translate", "--model", str(model), "x"])
    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as info:
            attenzione.cli.main()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert info.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
