"""The text steps stand alone: no step imports another, what they share lives in modules of
its own, and what a step needs of the pipeline it declares (``Step.places_tags``) rather than
the pipeline knowing steps by name."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Sequence

import pytest

from attenzione.data import EOS_ID, WordTokenizer
from attenzione.pipeline import STEPS, Context, Pipeline, Segment, Step
from attenzione.pipeline.carry import Carry


@pytest.fixture(scope="module")
def ctx() -> Context:
    tok = WordTokenizer.train(["the red cat is here", "i was born in"])
    return Context(tok, 63, EOS_ID)


def _imported_modules(module: object) -> set[str]:
    """Every ``attenzione.…`` module a module's source imports (lazy imports included)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_step_imports_another_step() -> None:
    step_modules = {inspect.getmodule(s).__name__ for s in STEPS}  # type: ignore[union-attr]
    for step in STEPS:
        module = inspect.getmodule(step)
        assert module is not None
        others = step_modules - {module.__name__}
        assert not _imported_modules(module) & others, (step.name, module.__name__)


class _Placer(Step):
    """A step that declares it places inline tags, and places nothing."""

    name = "placer"
    places_tags = True


def test_a_step_that_places_tags_lets_inline_pairs_stay_in_their_stretch(ctx: Context) -> None:
    line = "the <b>cat</b> is here"
    # no step places tags: every tag cuts the line where it stands
    alone = Pipeline([Carry()]).prepare(line, ctx)
    assert [s.text for s in alone] == ["the", "<b>", "cat", "</b>", "is here"]
    assert not any(s.tags for s in alone)
    # a step that declares it places them: the pair stays, taken out of the text
    (seg,) = Pipeline([Carry(), _Placer()]).prepare(line, ctx)
    assert seg.text == "the cat is here"
    assert [t.text for t in seg.tags] == ["<b>", "</b>"] and seg.tags_length == 12
    # the inline-tags step is such a step; no other is
    assert [s.name for s in STEPS if s.places_tags] == ["inline-tags"]


def test_a_segment_notes_in_typed_fields_and_its_copies_are_apart() -> None:
    seg = Segment("the cat", capitals=True, piece=(1, 3), folded=(("Gdansk", "Gdańsk"),))
    copy = seg.but(text="il gatto", piece=(2, 3))
    assert (copy.capitals, copy.piece, copy.folded) == (True, (2, 3), (("Gdansk", "Gdańsk"),))
    assert (seg.text, seg.piece) == ("the cat", (1, 3))
    plain = Segment("x")
    assert (plain.tags, plain.capitals, plain.piece, plain.continues) == ((), False, (0, 1), False)
    assert (plain.source, plain.folded, plain.keep_inline) == (None, (), False)


def test_restoring_reads_only_the_segment(ctx: Context) -> None:
    # a segment prepared by one pipeline is restored by the same steps from its fields alone
    pipeline = Pipeline.build(["carry", "capitals", "numbers"])
    (seg,) = pipeline.prepare("I WAS BORN IN 2017", ctx)
    assert seg.capitals and seg.source == "I was born in 2017"
    tokens: Sequence[int] = []
    assert pipeline.restore(seg, "sono nato nel 20177", ctx, tokens) == "SONO NATO NEL 2017"
