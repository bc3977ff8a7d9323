"""Imports point downward only (docs/architecture.md's layers), checked by reading the source.

Two checks, because either alone lets a cycle through: every import goes to the same or a
lower layer, and the graph of imports between the package's parts has no cycle at all — two
parts of one layer (``translator`` and ``training``, say) may use one another in one direction
only. Imports inside functions count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "attenzione"

# module (relative to attenzione, dotted) -> layer; packages list their first component
LAYERS = {
    "config": 0,
    "atomic": 0,
    "threads": 0,
    "languages": 0,
    "data": 1,
    "documents": 1,
    "viz": 1,
    "evaluation": 2,
    "model": 2,
    "search": 3,
    "weights": 3,
    "interop": 4,
    "pipeline": 4,
    "translator": 5,
    "training": 6,
    "cli": 7,
    "serve": 7,
    "__main__": 8,
}


def _modules(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path, root: Path = ROOT) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


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


def _file(dotted: str, modules: set[str]) -> str | None:
    """The module file of the module or package ``dotted`` (``data`` → ``data.__init__``)."""
    for name in (dotted, f"{dotted}.__init__" if dotted else "__init__"):
        if name in modules:
            return name
    return None


def _file_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the other modules of the package it imports, functions' lazy imports
    included. ``from attenzione.pkg import name`` is the file ``pkg/name.py`` when there is
    one, else ``pkg/__init__.py`` (where ``name`` is defined or re-exported)."""
    modules = {_name(path, root) for path in _modules(root)}
    graph: dict[str, set[str]] = {}
    for path in _modules(root):
        found: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] != "attenzione":
                    continue
                base = node.module.removeprefix("attenzione").lstrip(".")
                for alias in node.names:
                    inner = f"{base}.{alias.name}" if base else alias.name
                    found.add(_file(inner, modules) or _file(base, modules))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("attenzione."):
                        found.add(_file(alias.name.removeprefix("attenzione."), modules))
        me = _name(path, root)
        graph[me] = {m for m in found if m is not None} - {me}
    return graph


def _mutual_imports(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The pairs of modules that import each other."""
    return {
        frozenset((a, b)) for a, targets in graph.items() for b in targets if a in graph.get(b, ())
    }


def _top(dotted: str) -> str:
    return dotted.split(".")[0]


def _graph() -> dict[str, set[str]]:
    """Top-level part -> the other top-level parts it imports."""
    graph: dict[str, set[str]] = {}
    for path in _modules():
        me = _top(_name(path))
        if me == "__init__":
            continue
        targets = {_top(t) for t in _imports(path)} & set(LAYERS)
        graph.setdefault(me, set()).update(targets - {me})
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a path [a, b, …, a], or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_imports_point_downward(path: Path) -> None:
    me = _top(_name(path))
    if me == "__init__":
        return
    assert me in LAYERS, f"{me} has no layer in docs/architecture.md's map: add it here"
    for target in _imports(path):
        top = _top(target)
        if top == me or top not in LAYERS:
            continue
        assert LAYERS[top] <= LAYERS[me], f"{_name(path)} (layer {LAYERS[me]}) imports {target}"


def test_no_import_cycle_between_parts() -> None:
    cycle = _find_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_catches_the_translator_training_cycle() -> None:
    """The check itself: the cycle this package once had (the trainer scored BLEU through
    the Translator, which loaded checkpoints through training/) is found."""
    graph = {k: set(v) for k, v in _graph().items()}
    graph.setdefault("translator", set()).add("training")
    graph.setdefault("training", set()).add("translator")
    assert _find_cycle(graph) is not None


# Files that still import each other, each pair one concept cut in two at a length rather
# than at a seam. The list only shrinks: a pair that no longer imports each other fails the
# test below until it is taken off.
KNOWN_MUTUAL_IMPORTS: set[frozenset[str]] = set()


def _pairs(pairs: set[frozenset[str]]) -> str:
    return "; ".join(sorted(" <-> ".join(sorted(pair)) for pair in pairs))


def test_no_two_files_import_each_other() -> None:
    """Two modules that need each other are one concept in two files (DESIGN.md's rule 10):
    no module imports a module that imports it back, at module level or in a function."""
    found = _mutual_imports(_file_graph())
    new = found - KNOWN_MUTUAL_IMPORTS
    assert not new, f"files that import each other: {_pairs(new)}"
    stale = KNOWN_MUTUAL_IMPORTS - found
    assert not stale, f"no longer import each other, take off KNOWN_MUTUAL_IMPORTS: {_pairs(stale)}"


def test_the_mutual_import_check_reads_lazy_imports_and_packages(tmp_path: Path) -> None:
    """The check itself, on a package of its own: an import inside a function counts, and
    ``from pkg import name`` is ``pkg/name.py`` when that file exists (not ``pkg/__init__``)."""
    root = tmp_path / "attenzione"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from attenzione.pkg.a import A\n")
    (root / "pkg" / "a.py").write_text("A = 1\n\ndef f():\n    from attenzione.pkg import b\n")
    (root / "pkg" / "b.py").write_text("import attenzione.pkg.a\n")
    (root / "c.py").write_text("from attenzione.pkg import A, b\n")
    graph = _file_graph(root)
    assert graph["c"] == {"pkg.__init__", "pkg.b"}
    assert _mutual_imports(graph) == {frozenset({"pkg.a", "pkg.b"})}


def test_data_and_viz_never_import_the_model() -> None:
    """Text and pictures stay testable without torch modules: data/, documents/, viz/ and
    atomic import neither the network, the search, the translator nor the trainer."""
    forbidden = {"model", "search", "pipeline", "translator", "training"}
    for path in _modules():
        if _top(_name(path)) not in ("data", "documents", "viz", "atomic"):
            continue
        bad = {_top(t) for t in _imports(path)} & forbidden
        assert not bad, f"{_name(path)} imports {bad}"


def test_the_teaching_path_never_imports_the_fast_path() -> None:
    """A reader of model/ meets the plain network: only model/fast/ may import model/fast/."""
    for path in _modules():
        name = _name(path)
        if not name.startswith("model.") or name.startswith("model.fast"):
            continue
        bad = {t for t in _imports(path) if t.startswith("model.fast")}
        assert not bad, f"{name} imports {bad}"


def test_only_model_dir_reads_or_writes_model_files() -> None:
    """One owner of model directories: nobody else names safetensors or torch.save/load.

    The owner is two modules: ``model_dir`` (the directory as a whole, its config, the
    training state) and ``weights`` (the tensor files)."""
    owners = {"translator.model_dir", "weights"}
    # the Marian importer reads a Hugging Face directory's weights: safetensors through
    # weights, and pytorch_model.bin through torch.load(weights_only=True), no code run
    owners |= {"interop.marian"}
    # and the hub download names the weight files it fetches (it reads none)
    owners |= {"interop.hub"}
    assert owners <= {_name(path) for path in _modules()}  # a rename must update this test
    for path in _modules():
        name = _name(path)
        if name in owners:
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ("safetensors", "torch.save(", "torch.load("):
            assert needle not in text, f"{name} uses {needle}: that is model_dir's job"


def test_nothing_but_the_entry_points_import_the_cli() -> None:
    for path in _modules():
        name = _name(path)
        if _top(name) in ("cli", "__main__"):
            continue
        assert "cli" not in {_top(t) for t in _imports(path)}, f"{name} imports the CLI"
