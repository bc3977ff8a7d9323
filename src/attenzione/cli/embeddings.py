"""``attenzione embeddings``: explore GloVe vectors, or a model's own embedding table
(neighbours, analogies, similarity).

Without ``--model`` the commands read GloVe (the packaged 6B 50d, or ``--glove PATH``), as
they always did. With ``--model NAME`` (an installed pair such as ``en-it``, or a model
directory) they read the rows of that model's embedding table instead
(:mod:`attenzione.translator.embedding_space`): ``--side source`` (the default) or
``target`` picks the table, a word is read by that side's tokenizer (several pieces: their
rows' mean), and ``--json`` prints the answer as ``POST /embeddings`` gives it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import at_least, check_argument_text, fail, model_path, user_errors
from attenzione.cli.threads import apply_blas_threads, apply_threads, threads_option

app = typer.Typer(
    help="Explore word embeddings: GloVe 6B 50d by default (--glove PATH for another file), "
    "or a model's own embedding table with --model NAME.",
    no_args_is_help=True,
)

GLOVE_OPTION = typer.Option(None, "--glove", help="A glove.*.txt file (default: packaged 6B 50d).")
PAIR = re.compile(r"([A-Za-z]{2,3})-([A-Za-z]{2,3})")


def model_name_option() -> Any:
    return typer.Option(
        None,
        "--model",
        "-m",
        help="Explore this model's own embedding table instead of GloVe: an installed pair "
        "(en-it; `attenzione models` lists them) or a model directory.",
        show_default=False,
    )


def side_option() -> Any:
    return typer.Option(
        None,
        "--side",
        help="With --model: the source or the target embedding table (default: source; the "
        "shipped models share one table for both).",
        show_default=False,
    )


def json_option() -> Any:
    return typer.Option(False, "--json", help="With --model: print the answer as JSON.")


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


# ---------------------------------------------------------------------- a model's table
def _model_dir(name: str) -> Path:
    """The model directory ``--model NAME`` names: a directory, or an installed pair."""
    path = Path(name).expanduser()
    if path.is_dir():
        return model_path(path, None, None)
    pair = PAIR.fullmatch(name.strip())
    if pair is None:
        fail(
            f"--model {name}: not a model directory, nor an installed pair such as en-it "
            "(attenzione models lists them)"
        )
    from attenzione.translator.registry import find

    return find(pair.group(1).lower(), pair.group(2).lower()).path


def _space(name: str, side: str | None, threads: int | None) -> Any:
    """The embedding space of model ``name``'s ``side`` (checked before anything loads)."""
    side = side or "source"
    if side not in ("source", "target"):
        fail(f"--side must be source or target, not {side!r}")
    directory = _model_dir(name)
    apply_threads(threads)  # before torch is imported: it sets the wait policy
    from attenzione.translator.translator import Translator

    return Translator.from_pretrained(directory).embedding_space(side)


def _only_with_model(model: str | None, glove: Path | None, side: str | None, json: bool) -> None:
    if model is not None and glove is not None:
        fail("--glove and --model explore different tables: give one of them")
    if model is None and (side is not None or json):
        flag = "--side" if side is not None else "--json"
        fail(f"{flag} reads a model's table: add --model NAME")


def _piece_list(query: Any) -> str:
    pieces = " + ".join(f"{p} ({i})" for p, i in zip(query.pieces, query.ids, strict=True))
    if len(query.ids) == 1:
        return f"{query.text} = {pieces}" if query.pieces[0] != query.text else pieces
    return f"{query.text} = the mean of {pieces}"


def _print(answer: Any, json_out: bool) -> None:
    """``answer`` (an :class:`~attenzione.translator.embedding_space.Answer`) as text or JSON."""
    if json_out:
        import json

        typer.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
        return
    t = answer.table
    language = f" ({t['language']})" if t.get("language") else ""
    typer.echo(
        f"the {t['side']} embedding table{language}: {t['rows']} rows × {t['width']}, "
        f"{t['dtype']}; {t['about']}"
    )
    for q in answer.queries:
        typer.echo(_piece_list(q))
    if answer.kind == "similarity":
        a, b = answer.queries
        typer.echo(f"cos({a.text}, {b.text}) = {answer.cosine:.4f}")
        return
    if answer.kind == "analogy":
        a, b, c = answer.queries
        typer.echo(f"{a.text} - {b.text} + {c.text} ≈")
    _table([(n.piece, n.cosine) for n in answer.neighbours])


# ---------------------------------------------------------------------- the commands
@app.command()
def nearest(
    word: str = typer.Argument(..., help="The word (or ▁piece) whose neighbours to list."),
    k: int = typer.Option(10, "-k", help="How many neighbours.", callback=at_least(1)),
    glove: Path | None = GLOVE_OPTION,
    model: str | None = model_name_option(),
    side: str | None = side_option(),
    json_out: bool = json_option(),
    threads: int | None = threads_option(),
) -> None:
    """The k words (pieces, with --model) most similar to WORD (cosine similarity)."""
    with user_errors():
        _only_with_model(model, glove, side, json_out)
        if model is not None:
            check_argument_text([word])
            _print(_space(model, side, threads).nearest(word, k), json_out)
            return
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
    model: str | None = model_name_option(),
    side: str | None = side_option(),
    json_out: bool = json_option(),
    threads: int | None = threads_option(),
) -> None:
    """Words (pieces, with --model) closest to A − B + C (king − man + woman ≈ queen)."""
    with user_errors():
        _only_with_model(model, glove, side, json_out)
        if model is not None:
            check_argument_text([a, b, c])
            _print(_space(model, side, threads).analogy(a, b, c, k), json_out)
            return
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
    model: str | None = model_name_option(),
    side: str | None = side_option(),
    json_out: bool = json_option(),
    threads: int | None = threads_option(),
) -> None:
    """Cosine similarity of two words (or pieces, with --model)."""
    with user_errors():
        _only_with_model(model, glove, side, json_out)
        if model is not None:
            check_argument_text([a, b])
            _print(_space(model, side, threads).similarity(a, b), json_out)
            return
        try:
            typer.echo(f"cos({a}, {b}) = {_load(glove, threads).similarity(a, b):.4f}")
        except _lookup_errors() as exc:
            fail(str(exc))
