"""``attenzione embeddings``: explore GloVe vectors (neighbours, analogies, similarity)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import at_least, fail, user_errors
from attenzione.cli.threads import apply_blas_threads, threads_option

app = typer.Typer(
    help="Explore word embeddings (GloVe 6B 50d by default; --glove PATH for another file).",
    no_args_is_help=True,
)

GLOVE_OPTION = typer.Option(None, "--glove", help="A glove.*.txt file (default: packaged 6B 50d).")


def _load(glove: Path | None, threads: int | None) -> Any:
    apply_blas_threads(threads)  # before numpy is imported: it reads the count then
    from attenzione.data.glove import load_glove

    return load_glove(glove)


def _table(rows: list[tuple[str, float]]) -> None:
    width = max((len(w) for w, _ in rows), default=4)
    for rank, (word, score) in enumerate(rows, start=1):
        typer.echo(f"{rank:>3}. {word:<{width}}  {score:.4f}")


def _lookup_errors() -> Any:
    from attenzione.data.glove import UnknownWordError

    return UnknownWordError


@app.command()
def nearest(
    word: str = typer.Argument(..., help="The word whose neighbours to list."),
    k: int = typer.Option(10, "-k", help="How many neighbours.", callback=at_least(1)),
    glove: Path | None = GLOVE_OPTION,
    threads: int | None = threads_option(),
) -> None:
    """The k words most similar to WORD (cosine similarity)."""
    with user_errors():
        try:
            _table(_load(glove, threads).nearest(word, k))
        except _lookup_errors() as exc:
            fail(str(exc))


@app.command()
def analogy(
    a: str = typer.Argument(..., help="e.g. king"),
    b: str = typer.Argument(..., help="e.g. man"),
    c: str = typer.Argument(..., help="e.g. woman"),
    k: int = typer.Option(5, "-k", help="How many answers.", callback=at_least(1)),
    glove: Path | None = GLOVE_OPTION,
    threads: int | None = threads_option(),
) -> None:
    """Words closest to A − B + C (king − man + woman ≈ queen)."""
    with user_errors():
        try:
            rows = _load(glove, threads).analogy(a, b, c, k)
            typer.echo(f"{a} - {b} + {c} ≈")
            _table(rows)
        except _lookup_errors() as exc:
            fail(str(exc))


@app.command()
def similarity(
    a: str = typer.Argument(...),
    b: str = typer.Argument(...),
    glove: Path | None = GLOVE_OPTION,
    threads: int | None = threads_option(),
) -> None:
    """Cosine similarity of two words."""
    with user_errors():
        try:
            typer.echo(f"cos({a}, {b}) = {_load(glove, threads).similarity(a, b):.4f}")
        except _lookup_errors() as exc:
            fail(str(exc))
