"""``attenzione models``: the models installed, by language pair
(:mod:`attenzione.translator.registry`), and ``models install`` / ``models remove`` of a pair
by name (:mod:`attenzione.translator.install`)."""

from __future__ import annotations

import json
from typing import Any

import typer

from attenzione.cli.common import language_code, user_errors

app = typer.Typer(
    help="The installed models by language pair; install or remove a pair by name.",
    invoke_without_command=True,
    no_args_is_help=False,
)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _figure(info: dict[str, Any], key: str) -> str:
    """``BLEU / chrF`` of a dev set the shipping script scored (beam search), or ``-`` (also
    for figures that are not numbers: info.json is anyone's to edit)."""
    scores = info.get(key)
    if not isinstance(scores, dict) or not _number(scores.get("bleu")):
        return "-"
    chrf = scores.get("chrf")
    return f"{scores['bleu']:.2f} / {chrf if _number(chrf) else float('nan'):.2f}"


def _parameters(info: dict[str, Any]) -> int | None:
    """The parameter count info.json records (None: none, or not a count)."""
    value = info.get("parameters")
    return value if _number(value) and isinstance(value, int) and value >= 0 else None


@app.callback()
def models(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the installed models (as `models list`), or install or remove a pair.

    The shipped models are inside the package; your own are in the user model folder
    (~/.local/share/attenzione/models, where `models install` puts them), or in the folders
    named by the environment variable ATTENZIONE_MODELS instead (one model directory per
    pair, e.g. ~/models/fr-en), and are taken before a shipped model of the same pair. Pick
    one with `attenzione translate --from it --to en`; a pair with no model of its own is
    translated through another language when two models make the way.
    """
    if ctx.invoked_subcommand is None:
        _list(as_json)


@app.command("list")
def list_models(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the installed models: pair, size, origin, licence and dev scores."""
    _list(as_json)


def _origin(m: Any) -> str:
    origin = m.info.get("origin")
    if m.shipped:
        return "shipped"
    if isinstance(origin, dict) and isinstance(origin.get("imported_from"), str):
        return str(origin["imported_from"])
    return "trained here" if "train_hours" in m.info else "your own"


def _licence(m: Any) -> str:
    """What the model's info.json says of its licence (a shipped model: its data's, which
    the README's "Data and attribution" and its info.json credit)."""
    if m.shipped:
        return "its data's (info.json's attribution)"
    licence = m.info.get("licence")
    return licence if isinstance(licence, str) and licence else "-"


def _list(as_json: bool) -> None:
    from attenzione.translator.registry import installed, reachable

    with user_errors():
        found = installed()
        sizes = {m.pair: m.size_bytes() for m in found}  # walks each directory once
        rows = [
            {
                "pair": m.pair,
                "source": m.source,
                "target": m.target,
                "path": str(m.path),
                "shipped": m.shipped,
                "parameters": _parameters(m.info),
                "bytes": sizes[m.pair],
                "flores_dev": _figure(m.info, "dev_flores_beam"),
                "tatoeba_dev": _figure(m.info, "dev_beam"),
                "origin": _origin(m),
                "licence": _licence(m),
            }
            for m in found
        ]
        if as_json:
            typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        if not rows:
            typer.echo("no model installed")
            return
        head = (
            "pair",
            "parameters",
            "MB",
            "FLORES dev BLEU/chrF",
            "Tatoeba dev BLEU/chrF",
            "origin",
            "licence",
            "from",
        )
        table = [head]
        for m, r in zip(found, rows, strict=True):
            params = _parameters(m.info)
            table.append(
                (
                    m.pair,
                    f"{params / 1e6:.1f}M" if params is not None else "-",
                    f"{sizes[m.pair] / 1e6:.1f}",
                    str(r["flores_dev"]),
                    str(r["tatoeba_dev"]),
                    str(r["origin"]),
                    str(r["licence"]),
                    "the package" if m.shipped else str(m.path),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            typer.echo(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
        direct = {m.pair for m in found}
        pivots = [
            f"{a}-{t}" for a, ts in reachable(found).items() for t in ts if f"{a}-{t}" not in direct
        ]
        if pivots:
            typer.echo(f"through another language: {', '.join(pivots)}")


@app.command("install")
def install(
    source: str = typer.Argument(
        ..., help="The source language (ISO 639-1: en).", callback=language_code
    ),
    target: str = typer.Argument(..., help="The target language (de).", callback=language_code),
    model: str | None = typer.Option(
        None,
        "--model",
        help="The hub id to install instead of the pair's OPUS-MT model "
        "(Helsinki-NLP/opus-mt-SRC-TGT): a tc-big one, or a multilingual one with --token.",
    ),
    token: str | None = typer.Option(
        None, "--token", help="A multilingual model's target-language token (>>ita<<)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace the pair if installed already."),
) -> None:
    """Install a language pair by name: the OPUS-MT model from the Hugging Face hub (needs
    huggingface_hub and the internet, or HF_HUB_OFFLINE=1 and its local cache), imported
    exactly, into the user model folder."""
    from attenzione.translator.install import install as install_pair

    with user_errors():
        typer.echo(f"installing {source}→{target} …", err=True)
        m = install_pair(source, target, hub_id=model, token=token, force=force)
        size = m.size_bytes() / 1e6
        typer.echo(
            f"installed {m.pair} ({m.info.get('parameters', 0):,} parameters, {size:.0f} MB, "
            f"licence: {m.info.get('licence')}) from {_origin(m)} into {m.path}"
        )


@app.command("remove")
def remove(
    source: str = typer.Argument(..., help="The source language.", callback=language_code),
    target: str = typer.Argument(..., help="The target language.", callback=language_code),
) -> None:
    """Remove a pair that `models install` installed (never a shipped model or your own)."""
    from attenzione.translator.install import remove as remove_pair

    with user_errors():
        path = remove_pair(source, target)
        typer.echo(f"removed {path}")
