"""The command line: the only place that reads argv and prints.

Each command group lives in its own module and is registered here; heavy imports (torch,
matplotlib) happen inside the commands so ``attenzione --help`` stays instant.

Ctrl-C ends any command with one line, ``interrupted``, and the shell's status for the signal
(130): the commands print it themselves (:func:`attenzione.cli.common.user_errors`), and
:func:`main` for an interrupt that got past a command (typer turns one into a silent exit 130).
Winding down takes a second once a model is loaded (freeing it, closing worker processes);
a second Ctrl-C meanwhile ends the process at once, without the traceback Python would print
from an exit handler.
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from attenzione.cli import (
    attention,
    average,
    embeddings,
    evaluate,
    export,
    imports,
    info,
    models,
    serve,
    train,
    translate,
)

app = typer.Typer(
    name="attenzione",
    help="Translate English↔Italian (or a pair you train), train your own model, and see its "
    "attention.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("translate")(translate.translate)
app.command("train")(train.train)
app.command("evaluate")(evaluate.evaluate)
app.command("average")(average.average)
app.command("attention")(attention.attention)
app.command("serve")(serve.serve)
app.command("info")(info.info)
app.command("export")(export.export)
app.command("import")(imports.import_model)
app.add_typer(models.app, name="models")
app.add_typer(embeddings.app, name="embeddings")


def main(command: typer.Typer = app) -> None:
    """Run ``command`` (the ``attenzione`` command line) on ``sys.argv``."""
    try:
        command()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
        # typer's answer to a KeyboardInterrupt no command caught: sys.exit(130), no word
        interrupt = exc.__context__.__cause__ if isinstance(exc.__context__, typer.Exit) else None
        if isinstance(interrupt, KeyboardInterrupt):
            typer.echo("interrupted", err=True)
            code = 128 + getattr(interrupt, "signum", signal.SIGINT)  # SIGTERM: 143
        if code > 128:  # stopped by a signal (128 + its number): a second one ends it now
            signal.signal(signal.SIGINT, lambda signum, frame: os._exit(code))
            sys.exit(code)
        raise
