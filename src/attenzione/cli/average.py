"""``attenzione average``: one model from the mean of a run's last checkpoints."""

from __future__ import annotations

from pathlib import Path

import typer

from attenzione.cli.common import at_least, check_output_dir, fail, user_errors


def _steps(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        steps = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        fail(f"--steps takes step numbers separated by commas, got {text!r}")
    if not steps:
        fail("--steps is empty")
    return steps


def average(
    run: Path = typer.Argument(..., help="The training run (its snapshots/ and last/)."),
    out: Path = typer.Option(..., "--out", "-o", help="Model directory to write."),
    last: int = typer.Option(
        5, "--last", "-n", help="Average the last N snapshots.", callback=at_least(1)
    ),
    steps: str | None = typer.Option(
        None, "--steps", help="Average these snapshots instead, e.g. 9000,9500,10000."
    ),
) -> None:
    """Average the weights of a run's last checkpoints into a model directory.

    The run must have been trained with --keep-snapshots K (it keeps the weights of its last K
    checkpoints in RUN/snapshots/). The average usually translates a little better than any
    one checkpoint; score it with `attenzione evaluate --model OUT`.
    """
    chosen = _steps(steps)
    check_output_dir(out, "--out")
    with user_errors():
        from attenzione.averaging import average_run

        info = average_run(run, out, last=last, steps=chosen)
    averaged = info["averaged_steps"]
    assert isinstance(averaged, list)
    typer.echo(
        f"averaged {len(averaged)} snapshots (steps {', '.join(map(str, averaged))}) into {out}"
    )
