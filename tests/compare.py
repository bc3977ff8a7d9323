"""Comparing results computed in different ways: texts and ids exactly, floats to a tolerance.

Two runs of the same model on the same input agree bit for bit only when the computation is
the same. Batched differently (other padded shapes), on another thread count, in a worker
process or with another kernel, a float sum is taken in another order and a score may move in
its 7th digit (seen on an Intel Xeon: ``-1.7517301119290865`` against ``-1.7517302586482122``,
same text and ids). :func:`assert_same_results` walks two results — translations, candidates,
hypotheses, lists, tuples, dicts, dataclasses — and asserts every non-float leaf equal and every
float close, naming the first place that differs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["REL", "ABS", "assert_same_results"]

# float32 carries about 7 significant digits; a sum taken in another order moves the last one
# or two, so 1e-5 relative is far above that noise and far below any real difference
REL = 1e-5
ABS = 1e-5


def assert_same_results(got: Any, want: Any, *, rel: float = REL, abs_: float = ABS) -> None:
    """Assert ``got`` and ``want`` equal, their floats within ``rel``/``abs_`` of each other."""
    _compare(got, want, "result", rel, abs_)


def _compare(got: Any, want: Any, where: str, rel: float, abs_: float) -> None:
    if isinstance(got, float) or isinstance(want, float):
        assert isinstance(got, (int, float)) and isinstance(want, (int, float)), (
            f"{where}: {got!r} != {want!r}"
        )
        assert math.isclose(got, want, rel_tol=rel, abs_tol=abs_), (
            f"{where}: {got!r} is not within {rel:g} of {want!r}"
        )
        return
    if dataclasses.is_dataclass(got) and not isinstance(got, type):
        assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
        for field in dataclasses.fields(got):
            name = field.name
            _compare(getattr(got, name), getattr(want, name), f"{where}.{name}", rel, abs_)
        return
    if isinstance(got, Mapping):
        assert isinstance(want, Mapping), f"{where}: a mapping against {type(want).__name__}"
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for key in got:
            _compare(got[key], want[key], f"{where}[{key!r}]", rel, abs_)
        return
    if isinstance(got, (list, tuple)):
        assert isinstance(want, (list, tuple)) and type(got) is type(want), (
            f"{where}: {type(got).__name__} against {type(want).__name__}"
        )
        assert len(got) == len(want), f"{where}: {len(got)} items != {len(want)}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _compare(a, b, f"{where}[{i}]", rel, abs_)
        return
    assert got == want, f"{where}: {got!r} != {want!r}"
