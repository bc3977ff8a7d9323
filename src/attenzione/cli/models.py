"""``attenzione models``: the models installed, by language pair
(:mod:`attenzione.translator.registry`)."""

from __future__ import annotations

import json
from typing import Any

import typer

from attenzione.cli.common import user_errors


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


def models(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """List the installed models: pair, where, size and dev scores.

    The shipped models are inside the package; your own are found in the folders named by
    the environment variable ATTENZIONE_MODELS (one model directory per pair, e.g.
    ~/models/fr-en), and are taken before a shipped model of the same pair. Pick one with
    `attenzione translate --from it --to en`.
    """
    from attenzione.translator.registry import installed

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
            }
            for m in found
        ]
        if as_json:
            typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        if not rows:
            typer.echo("no model installed")
            return
        head = ("pair", "parameters", "MB", "FLORES dev BLEU/chrF", "Tatoeba dev BLEU/chrF", "from")
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
                    "shipped" if m.shipped else str(m.path),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            typer.echo(
                "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            )
