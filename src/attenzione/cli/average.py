"""``attenzione average``: one model from the mean of a run's last checkpoints."""

from __future__ import annotations

from pathlib import Path

import typer

from attenzione.cli.common import at_least, check_model_out, fail, user_errors
from attenzione.cli.threads import apply_threads, threads_option


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
    blend_with: Path | None = typer.Option(
        None,
        "--blend-with",
        help="A model of the same shape and tokenizers (typically the one the run started "
        "from) to move the mean towards, by --blend-weight.",
    ),
    blend_weight: float = typer.Option(
        0.3,
        "--blend-weight",
        help="With --blend-with: (1 - W) * mean + W * that model (0-1).",
    ),
    force: bool = typer.Option(False, "--force", help="Replace --out if it holds a model."),
    threads: int | None = threads_option(),
) -> None:
    """Average the weights of a run's last checkpoints into a model directory.

    The run must have been trained with --keep-snapshots K (it keeps the weights of its last K
    checkpoints in RUN/snapshots/). The average usually translates a little better than any
    one checkpoint; score it with `attenzione evaluate --model OUT`.
    """
    chosen = _steps(steps)
    if not 0.0 <= blend_weight <= 1.0:
        fail(f"--blend-weight must be between 0 and 1, got {blend_weight}")
    with user_errors():
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        from attenzione.training.averaging import average_run, refuse_run_entry

        refuse_run_entry(run, out)  # the run's last/, snapshots/ …: never, even with --force
        keep = {"the run": run} | ({"the model of --blend-with": blend_with} if blend_with else {})
        check_model_out(out, force=force, keep=keep)

        info = average_run(
            run, out, last=last, steps=chosen, blend_with=blend_with, blend_weight=blend_weight
        )
    averaged = info["averaged_steps"]
    assert isinstance(averaged, list)
    blended = f", moved {blend_weight:g} of the way to {blend_with}," if blend_with else ""
    typer.echo(
        f"averaged {len(averaged)} snapshots (steps {', '.join(map(str, averaged))}){blended}"
        f" into {out}"
    )
