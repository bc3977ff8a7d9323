"""Checkpoint directories, written atomically.

A checkpoint is a directory a :class:`~attenzione.translator.Translator` can load as it is::

    config.json          the ModelConfig
    model.safetensors    the weights (no pickle: loading a model never runs code)
    src_tokenizer/       the tokenizers the model was trained with, so translation always
    tgt_tokenizer/       tokenizes exactly as training did
    info.json            free-form facts: preset, step, dev BLEU, data attribution
    training_state.pt    only in ``last/``: optimizer, step, RNG states, data position

Atomicity: everything is written into a temporary sibling directory, which then replaces the
old one by two renames (old → ``NAME.old``, new → ``NAME``), after which ``NAME.old`` is
deleted. A kill -9 at any moment leaves either the old or the new checkpoint complete under
``NAME`` or ``NAME.old``; :func:`find_checkpoint` looks in both.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from attenzione.data.tokenizers import Tokenizer, load_tokenizer
from attenzione.model import Transformer

STATE_NAME = "training_state.pt"
INFO_NAME = "info.json"


def write_checkpoint(
    directory: str | Path,
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    *,
    info: dict[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    dtype: torch.dtype | None = None,
) -> Path:
    """Write a complete checkpoint to ``directory``, replacing any previous one atomically."""
    target = Path(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
    try:
        model.save(tmp, dtype=dtype)
        src_tok.save(tmp / "src_tokenizer")
        tgt_tok.save(tmp / "tgt_tokenizer")
        (tmp / INFO_NAME).write_text(json.dumps(info or {}, indent=2) + "\n", encoding="utf-8")
        if state is not None:
            torch.save(state, tmp / STATE_NAME)
        old = target.with_name(target.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        if old.exists():
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def find_checkpoint(directory: str | Path) -> Path | None:
    """The complete checkpoint at ``directory``, or its ``.old`` twin after a crash."""
    target = Path(directory)
    for candidate in (target, target.with_name(target.name + ".old")):
        if (candidate / "config.json").is_file() and (candidate / "model.safetensors").is_file():
            return candidate
    return None


def load_tokenizers(directory: str | Path) -> tuple[Tokenizer, Tokenizer]:
    directory = Path(directory)
    return load_tokenizer(directory / "src_tokenizer"), load_tokenizer(directory / "tgt_tokenizer")


def load_state(directory: str | Path) -> dict[str, Any]:
    """The resumable training state (tensors, numbers, dicts only: ``weights_only=True``)."""
    path = Path(directory) / STATE_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this checkpoint cannot be resumed")
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    return state


def read_info(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / INFO_NAME
    if not path.is_file():
        return {}
    info: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return info
