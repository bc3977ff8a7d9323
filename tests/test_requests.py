"""What varies per call is one frozen request; what belongs to the loaded model is fixed when
the translator is made (issue 65 item 4). A user's own hooks reach the search through
``Translator.translate(…, hooks=[…])``, after the registered ones (item 3); a target prefix
is forced on the first segment of every text."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from attenzione.config import DecodeConfig, search_config
from attenzione.search.constraints import Never
from attenzione.search.hooks import Constraint
from attenzione.search.registry import HookBatch, Terms
from attenzione.translator.bounds import Bounds
from attenzione.translator.translator import Request, Translator
from tiny_model import tiny_translator

TEXTS = ["the cat is here", "the old dog is there", "cat", "the red cat is here ."]
SEARCHES = [search_config(1), search_config(3), search_config(3, n_best=2)]


@pytest.fixture(scope="module")
def translator() -> Translator:
    return tiny_translator(seed=1)


def _ids(results: list) -> set[int]:
    return {i for r in results for c in r.candidates for i in c.ids}


# ---------------------------------------------------------------------------- a user's hooks
@pytest.mark.parametrize("search", SEARCHES, ids=["greedy", "beam3", "nbest2"])
def test_a_users_constraint_given_to_translate_is_applied(
    translator: Translator, search: DecodeConfig
) -> None:
    free = translator.translate(TEXTS, search=search, steps=())
    written = _ids(free)
    assert written  # the untrained model writes something: ban all it wrote
    eos = translator.model.config.eos_id
    never = Never(sorted(written - {eos}), eos)
    banned = translator.translate(TEXTS, search=search, steps=(), hooks=[never])
    assert not _ids(banned) & (written - {eos})
    # the same hook through the other entry points
    ids = [translator.encode_source(t) for t in TEXTS]
    hyps = translator.translate_ids(ids, search=search, hooks=[never])
    assert not {t for hs in hyps for h in hs for t in h.tokens} & (written - {eos})
    streamed = list(translator.translate_iter(TEXTS, search=search, steps=(), hooks=[never]))
    assert [r.text for r in streamed] == [r.text for r in banned]


def test_a_hook_maker_is_called_for_each_batch_with_what_the_batch_is(
    translator: Translator,
) -> None:
    seen: list[HookBatch] = []

    def ban_the_first_source_piece(batch: HookBatch) -> Constraint:
        seen.append(batch)
        first = sorted({int(s[0]) for s in batch.sources} - {translator.model.config.eos_id})
        return Never([min(first, default=4)], translator.model.config.eos_id)

    translator.translate(TEXTS, search=search_config(2), steps=(), batch_size=2,
                         hooks=[ban_the_first_source_piece])  # fmt: skip
    assert len(seen) == 2  # four texts, two a batch
    assert all(b.ids.shape[0] == 2 and len(b.sources) == 2 for b in seen)
    assert all(b.cfg.beam_size == 2 for b in seen)


def test_a_hook_that_makes_no_hook_is_one_line(translator: Translator) -> None:
    with pytest.raises(TypeError, match="hook 0 made a int") as err:
        translator.translate(TEXTS, hooks=[lambda batch: 3])  # type: ignore[list-item]
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="hook 0 is neither"):
        translator.translate(TEXTS, hooks=[3])  # type: ignore[list-item]


# ---------------------------------------------------------------------------- a prefix
@pytest.mark.parametrize("search", SEARCHES[:2], ids=["greedy", "beam3"])
def test_a_prefix_begins_every_translation(translator: Translator, search: DecodeConfig) -> None:
    prefix = "il gatto"
    want = tuple(translator.tgt_tokenizer.encode(prefix))
    assert want
    for result in translator.translate(TEXTS, search=search, steps=(), prefix=prefix):
        for cand in result.candidates:
            assert cand.ids[: len(want)] == want, (result.source, cand.ids)
    assert all(
        r.text.startswith(prefix) for r in translator.translate(TEXTS, search=search, prefix=prefix)
    )


# ---------------------------------------------------------------------------- the request
def test_a_request_is_frozen_and_filled_in_with_the_models_own(translator: Translator) -> None:
    made = translator.request(search=search_config(2))
    assert made.terms == translator.terms and made.steps == translator.pipeline
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.batch_size = 3  # type: ignore[misc]
    again = translator.request(made, batch_size=3)  # another, from this one
    assert again.batch_size == 3 and made.batch_size != 3 and again.search == made.search
    # a request given whole gives what its fields as keywords give
    whole = translator.translate(TEXTS, Request(search=search_config(2), terms=Terms.none()))
    keywords = translator.translate(TEXTS, search=search_config(2), terms=Terms.none())
    assert whole == keywords


def test_a_request_is_checked_once_where_it_is_made(translator: Translator) -> None:
    narrow = translator.replace(bounds=Bounds(max_rows=6))
    assert narrow.request(search=search_config(3), batch_size=64).batch_size == 2
    with pytest.raises(ValueError, match="at most 6") as err:
        narrow.request(search=search_config(7))
    assert "\n" not in str(err.value)
    for options, message in (
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"search": "beam"}, "search must be a DecodeConfig"),
        ({"terms": 3}, "terms must map"),
        ({"tag": 5}, "tag must be a string"),
        ({"tag": "news"}, "unknown corpus tag"),
        ({"terms": {"no-such": 1.0}}, "unknown ranking term"),
    ):
        with pytest.raises(ValueError, match=message):
            translator.request(**options)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is a Request, not a DecodeConfig"):
        translator.translate(TEXTS, search_config(2))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- fixed at construction
def test_a_translator_is_fixed_once_made(translator: Translator) -> None:
    for name, value in (("number_format", "comma"), ("workers", None), ("bounds", Bounds(4))):
        with pytest.raises(AttributeError, match=f"fixed once made: {name} cannot be set"):
            setattr(translator, name, value)
    with pytest.raises(TypeError):
        translator.info["number_format"] = "comma"  # type: ignore[index]
    other = translator.replace(number_format="comma")
    assert other.number_format == "comma" and translator.number_format == "keep"
    assert other.model is translator.model  # the same network, not a copy
    with pytest.raises(TypeError, match="replace\\(\\) takes"):
        translator.replace(beam=4)
    with pytest.raises(ValueError, match="number_format must be one of"):
        translator.replace(number_format="roman")
    torch.testing.assert_close(
        other.model.generator.weight, translator.model.generator.weight, rtol=0, atol=0
    )
