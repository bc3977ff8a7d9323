"""The service's model pool: every key known at once, a model loaded when first asked for, one
load for concurrent askers, and the least recently used unloaded past ``max_models`` or the
memory budget. Loaders here count their calls; the routes are the real Route type."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from attenzione.serve.batcher import Route
from attenzione.serve.language import Languages
from attenzione.serve.pool import Loader, ModelPool


def counting(keys: list[str], delay: float = 0.0, size: int = 0) -> tuple[dict[str, Loader], Any]:
    calls: dict[str, int] = dict.fromkeys(keys, 0)
    lock = threading.Lock()

    def loader(key: str) -> Loader:
        def load() -> Route:
            with lock:
                calls[key] += 1
            time.sleep(delay)
            return Route(translator=key)  # type: ignore[arg-type]  # a marker, not a model

        return Loader(load, size)

    return {k: loader(k) for k in keys}, calls


def test_keys_are_known_without_loading_and_a_lookup_loads_once() -> None:
    loaders, calls = counting(["en-it", "it-en"])
    pool = ModelPool(loaders)
    assert list(pool) == ["en-it", "it-en"] and len(pool) == 2 and "it-en" in pool
    assert pool.loaded() == [] and sum(calls.values()) == 0
    assert pool["it-en"].translator == "it-en"
    assert pool["it-en"].translator == "it-en"
    assert calls == {"en-it": 0, "it-en": 1} and pool.loaded() == ["it-en"]
    with pytest.raises(KeyError):
        pool["fr-en"]


def test_concurrent_askers_share_one_load() -> None:
    loaders, calls = counting(["en-it"], delay=0.2)
    pool = ModelPool(loaders)
    with ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda _: pool["en-it"].translator, range(8)))
    assert got == ["en-it"] * 8 and calls["en-it"] == 1


def test_the_least_recently_used_is_unloaded_past_max_models() -> None:
    loaders, calls = counting(["a-b", "b-c", "c-d"])
    pool = ModelPool(loaders, max_models=2)
    pool["a-b"], pool["b-c"], pool["a-b"]  # b-c is now the least recently used
    pool["c-d"]
    assert pool.loaded() == ["a-b", "c-d"] and pool.unloads == 1
    pool["b-c"]  # loaded again: a-b goes
    assert pool.loaded() == ["c-d", "b-c"] and calls == {"a-b": 1, "b-c": 2, "c-d": 1}
    assert pool.snapshot()["loaded"] == ["c-d", "b-c"]


def test_the_memory_budget_keeps_the_model_just_asked_for() -> None:
    loaders, _ = counting(["a-b", "b-c"], size=300)
    pool = ModelPool(loaders, max_bytes=500)
    pool["a-b"]
    pool["b-c"]
    assert pool.loaded() == ["b-c"]  # two would be 600 bytes
    alone = ModelPool(counting(["a-b"], size=900)[0], max_bytes=500)
    assert alone["a-b"].translator == "a-b" and alone.loaded() == ["a-b"]


def test_bad_bounds_are_refused() -> None:
    loaders, _ = counting(["a-b"])
    for kwargs in ({"max_models": 0}, {"max_bytes": -1}):
        with pytest.raises(ValueError):
            ModelPool(loaders, **kwargs)
    with pytest.raises(ValueError):
        ModelPool({})


def test_pivot_pairs_go_through_english_first_and_a_direct_model_wins() -> None:
    langs = Languages(("it", "en"), ("en", "de"), ("it", "fr"), ("fr", "de"), ("de", "it"))
    assert langs.via("it", "de") == "en"  # English first, though French would do
    assert langs.via("de", "it") is None  # a model of its own
    assert langs.targets("it") == ["en", "fr", "de"]
    assert langs.via("en", "it") == "de"  # en → de → it: two models join up
    listing = {row["code"]: row["targets"] for row in langs.listing()}
    assert "de" in listing["it"] and "en" not in listing["en"]
    assert Languages(("it", "en"), ("en", "de"), pivot=False).targets("it") == ["en"]
