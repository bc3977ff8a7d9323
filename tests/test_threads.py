"""Threads that suit the machine (issue 53): the count follows the cores other processes leave
free, every command that computes takes ``--threads``, and OpenMP threads sleep at barriers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione import threads
from attenzione.cli import app
from tiny_model import tiny_translator


@pytest.fixture(autouse=True)
def keep_torch_threads() -> Iterator[None]:
    """The commands below set this process's count: put it back for the other tests."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _machine(monkeypatch: pytest.MonkeyPatch, cores: int, load: float) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(threads, "running_elsewhere", lambda: int(load + 0.5))


@pytest.mark.parametrize(
    ("cores", "load", "expected"),
    [(2, 0.0, 2), (2, 0.3, 2), (2, 1.0, 1), (2, 2.0, 1), (2, 7.5, 1), (8, 3.2, 5), (1, 0.0, 1)],
)
def test_the_default_count_is_the_cores_left_free(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, expected: int
) -> None:
    _machine(monkeypatch, cores, load)
    assert threads.default_threads() == expected


def test_omp_num_threads_wins_and_no_load_average_means_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _machine(monkeypatch, 4, 4.0)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # torchrun's, or the user's, explicit choice
    assert threads.default_threads() == 3

    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.setattr(threads, "running_elsewhere", lambda: None)  # no runnable count:
    monkeypatch.setattr(os, "getloadavg", no_load)  # and no load average either
    assert threads.default_threads() == 4


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "tiny"
    tiny_translator().save_pretrained(path)
    return path


def test_translate_threads_sets_torchs_count(model: Path) -> None:
    torch.set_num_threads(2)
    res = CliRunner().invoke(app, ["translate", "--model", str(model), "--threads", "1", "dog"])
    assert res.exit_code == 0, res.output
    assert torch.get_num_threads() == 1
    bad = CliRunner().invoke(app, ["translate", "--model", str(model), "--threads", "0", "dog"])
    assert bad.exit_code == 2 and "--threads must be >= 1" in bad.output


def test_without_threads_a_busy_machine_gets_fewer(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.set_num_threads(2)
    _machine(monkeypatch, 2, 2.0)  # both cores busy with other work
    res = CliRunner().invoke(app, ["translate", "--model", str(model), "dog"])
    assert res.exit_code == 0, res.output
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize(
    "command",
    [
        ["translate"],
        ["evaluate"],
        ["attention"],
        ["average"],
        ["train"],
        ["embeddings", "nearest"],
        ["embeddings", "analogy"],
        ["embeddings", "similarity"],
    ],
)
def test_every_command_that_computes_takes_threads(command: list[str]) -> None:
    res = CliRunner().invoke(app, [*command, "--help"])
    assert res.exit_code == 0 and "--threads" in res.output, res.output


def test_the_wait_policy_is_passive_where_it_pays_unless_the_environment_says() -> None:
    """Set before torch loads OpenMP (which reads it once): for more threads than free cores
    and for a long-running process, not for threads that each have a core; a user's own
    choice stays."""
    cases = [
        ("apply_threads(512)", None, "PASSIVE"),  # more threads than any machine's free cores
        ("apply_threads(1, long_running=True)", None, "PASSIVE"),
        ("apply_threads(1)", None, "unset"),  # one thread waits for nobody
        ("apply_threads(512)", "ACTIVE", "ACTIVE"),
    ]
    for call, given, expected in cases:
        code = (
            "import os, sys; from attenzione.threads import apply_threads; "
            f"assert 'torch' not in sys.modules; {call}; "
            "print(os.environ.get('OMP_WAIT_POLICY', 'unset'))"
        )
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if given is not None:
            env["OMP_WAIT_POLICY"] = given
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected, (call, out.stderr)


def test_the_runnable_count_sees_a_busy_core() -> None:
    """A process spinning beside this one is counted now, not a minute later."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        import time

        time.sleep(0.5)
        seen = threads.running_elsewhere()
        assert seen is None or seen >= 1
    finally:
        spinner.kill()
        spinner.wait()
