"""The bound on search (attenzione.translator.bounds): a beam wider than the machine can hold
is refused in one line before any work; a wide beam makes smaller batches, not an error."""

from __future__ import annotations

import pytest

from attenzione.config import search_config
from attenzione.translator.bounds import MAX_BEAM, Bounds, bounds_for, row_bytes
from tiny_model import tiny_translator


def test_the_bound_follows_the_memory_and_the_model() -> None:
    tr = tiny_translator()
    cfg = tr.model.config
    # half the memory, in rows of the model's size
    assert bounds_for(cfg, memory=2 * 100 * row_bytes(cfg)).max_rows == 100
    assert bounds_for(cfg, memory=0).max_rows == 1  # one greedy row is always allowed
    assert Bounds(10**9).max_beam == MAX_BEAM
    # a longer or wider model needs more per row
    assert row_bytes(cfg) < row_bytes(type(cfg)(**{**cfg.__dict__, "max_len": 2 * cfg.max_len}))


def test_a_beam_too_wide_is_refused_in_one_line() -> None:
    tr = tiny_translator().replace(bounds=Bounds(max_rows=40))
    with pytest.raises(ValueError, match="beam of 50000 .* at most 40") as err:
        tr.translate("a b", search=search_config(beam=50000))
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="of 41 .* at most 40"):
        tr.translate("a b", search=search_config(beam=4, n_best=41))
    with pytest.raises(ValueError, match="beam of 41"):
        tr.translate_ids([[5, 2]], search=search_config(beam=41))


def test_a_wide_beam_makes_smaller_batches() -> None:
    tr = tiny_translator()
    texts = ["a b", "b a", "a", "b b a"]
    wide = search_config(beam=8)
    free = [t.text for t in tr.translate(texts, search=wide)]
    tr = tr.replace(bounds=Bounds(max_rows=8))  # one sentence at a time at beam 8
    assert tr.bounds.batch_for(wide, 64) == 1
    assert tr.bounds.batch_for(search_config(beam=1), 64) == 8
    assert [t.text for t in tr.translate(texts, search=wide)] == free
