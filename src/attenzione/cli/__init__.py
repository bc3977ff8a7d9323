"""The command line: the only place that reads argv and prints.

Each command group lives in its own module and is registered here; heavy imports (torch,
matplotlib) happen inside the commands so ``attenzione --help`` stays instant.
"""

from __future__ import annotations

import typer

from attenzione.cli import (
    attention,
    average,
    embeddings,
    evaluate,
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
app.command("models")(models.models)
app.add_typer(embeddings.app, name="embeddings")


def main() -> None:
    app()
