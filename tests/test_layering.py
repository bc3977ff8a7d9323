"""Imports point downward only (DESIGN.md's layers), checked by reading the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "attenzione"

# module (relative to attenzione, dotted) -> layer; packages list their first component
LAYERS = {
    "config": 0,
    "masks": 0,
    "positional": 0,
    "cache": 0,
    "attention": 1,
    "embeddings": 1,
    "layers": 2,
    "model": 3,
    "decoding": 4,
    "data": 5,
    "training": 5,
    "translator": 5,
    "evaluation": 5,
    "viz": 5,
    "explain": 5,
    "speed": 5,
    "cli": 6,
    "__main__": 7,
}


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("attenzione")
        ):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("attenzione"))
    return {m.removeprefix("attenzione").lstrip(".") for m in found} - {""}


def _top(dotted: str) -> str:
    return dotted.split(".")[0]


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_imports_point_downward(path: Path) -> None:
    me = _top(_name(path))
    if me == "__init__":
        return
    assert me in LAYERS, f"{me} has no layer in DESIGN.md's map: add it here"
    for target in _imports(path):
        top = _top(target)
        if top == me or top not in LAYERS:
            continue
        assert LAYERS[top] <= LAYERS[me], f"{_name(path)} (layer {LAYERS[me]}) imports {target}"


def test_data_and_viz_never_import_the_model() -> None:
    forbidden = {"model", "layers", "attention", "training", "translator", "decoding", "explain"}
    for path in _modules():
        if _top(_name(path)) not in ("data", "viz"):
            continue
        bad = {_top(t) for t in _imports(path)} & forbidden
        assert not bad, f"{_name(path)} imports {bad}"


def test_nothing_but_the_entry_points_import_the_cli() -> None:
    for path in _modules():
        name = _name(path)
        if _top(name) in ("cli", "__main__"):
            continue
        assert "cli" not in {_top(t) for t in _imports(path)}, f"{name} imports the CLI"
