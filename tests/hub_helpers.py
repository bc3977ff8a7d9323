"""A local Hugging Face hub cache of small OPUS-MT-style Marian models built by the tests.

``attenzione models install`` and ``serve --install`` download through huggingface_hub; with
``HF_HUB_OFFLINE=1`` and ``HF_HUB_CACHE`` pointing here, huggingface_hub reads the hub's own
cache layout (``models--OWNER--NAME/snapshots/COMMIT/…`` and ``refs/main``) — so the code
under test is the code that downloads, and nothing of ours is mocked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from marian_helpers import marian_model, opus_mt_dir


def cache_model(cache: Path, repo_id: str, hf: Any, pair: tuple[str, str]) -> Path:
    """``hf`` saved as Helsinki-NLP's ``repo_id`` is, in the hub cache at ``cache``."""
    owner, name = repo_id.split("/")
    repo = cache / f"models--{owner}--{name}"
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    snapshot = opus_mt_dir(repo / "snapshots" / commit, hf, pair)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snapshot


def opus_cache(cache: Path, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """One small Marian model a pair (each its own weights, seeded by its place), cached as
    ``Helsinki-NLP/opus-mt-SRC-TGT``; the transformers models, by pair."""
    made = {}
    for i, pair in enumerate(pairs):
        hf = marian_model(seed=20 + i)
        cache_model(cache, f"Helsinki-NLP/opus-mt-{pair[0]}-{pair[1]}", hf, pair)
        made[pair] = hf
    return made


@contextmanager
def offline_hub(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """HF_HUB_OFFLINE=1 on ``cache``, for this process (huggingface_hub read its settings
    when first imported: they are set there too) and for the servers it starts; the variables
    set, for a subprocess's environment."""
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(cache.parent)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    except ImportError:
        pass
    yield env
