"""Hugging Face hub models and their cards: a download by hub id, and what a directory says
of itself (the pair it translates, its licence).

Nothing here runs unless a user names a hub id or imports a directory: the default path and
the tests never reach the network (a download is tested against a local cache,
``HF_HUB_OFFLINE``).
"""

from __future__ import annotations

import re
from pathlib import Path

from attenzione.data.jsonfile import read_json
from attenzione.weights import member

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?")
# what an import reads of a hub repository: the small files, then one set of weights
HUB_FILES = ["config.json", "*.spm", "vocab.json", "target_vocab.json", "*.md", "*_config.json"]
# the weights a Hugging Face directory may hold (interop.marian reads them)
HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
HUB_WEIGHTS = (["model.safetensors", "model.safetensors.index.json", "model-*.safetensors"],
               ["pytorch_model.bin"])  # fmt: skip


def download(repo_id: str) -> Path:
    """The directory of the Hugging Face hub model ``repo_id`` (downloaded with
    huggingface_hub, or its cached copy when ``HF_HUB_OFFLINE`` is set); every failure — no
    huggingface_hub, no network, no such model — is a one-line ValueError."""
    if not HUB_ID.fullmatch(repo_id):
        raise ValueError(f"{repo_id} is neither a directory nor a hub id (owner/name)")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ValueError(
            f"{repo_id} is not a directory here, and downloading it from the Hugging Face hub "
            "needs huggingface_hub (pip install huggingface_hub)"
        ) from None
    path = Path()
    for weights in HUB_WEIGHTS:  # safetensors when the repository has them, else the pickle
        try:
            path = Path(snapshot_download(repo_id, allow_patterns=[*HUB_FILES, *weights]))
        except Exception as exc:  # offline, no such repository, a network error …: one line
            first = (str(exc).strip().splitlines() or [""])[0].split(". ")[0][:160]
            raise ValueError(
                f"could not download {repo_id} from the Hugging Face hub ({type(exc).__name__}"
                f"{': ' + first if first else ''}); without internet, download the model "
                "elsewhere and give its directory"
            ) from None
        if any((path / name).is_file() for name in HF_WEIGHTS):
            return path
    return path  # no weights at all: read_hf_weights names what is missing


# ---------------------------------------------------------------------------- info.json
OPUS_NAME = re.compile(r"opus-mt-(?:tc-(?:big|base)-)?([a-z]{2,3})-([a-z]{2,3})$")
LICENCE_LINE = re.compile(r"^license:\s*(\S+)\s*$", re.MULTILINE)


def language_pair(directory: str | Path, origin: str) -> tuple[str, str] | None:
    """The pair a Marian directory translates: its ``tokenizer_config.json``'s
    ``source_lang``/``target_lang``, else an ``opus-mt-SRC-TGT`` name (None: neither says)."""
    path = member(directory, "tokenizer_config.json")
    if path.is_file():
        try:
            tok = read_json(path)
        except ValueError:  # damaged: the tokenizer's reader says so, in one line
            tok = {}
        src, tgt = (
            tok.get(k) if isinstance(tok, dict) else None for k in ("source_lang", "target_lang")
        )
        if isinstance(src, str) and isinstance(tgt, str) and src.isalpha() and tgt.isalpha():
            return src.lower(), tgt.lower()
    for name in (origin.rstrip("/").rsplit("/", 1)[-1], Path(directory).name):
        found = OPUS_NAME.search(name)
        if found:
            return found.group(1), found.group(2)
    return None


def licence(directory: str | Path) -> str:
    """What the model card (``README.md``'s front matter) says the licence is."""
    path = member(directory, "README.md")
    if path.is_file():
        found = LICENCE_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1).strip("'\"")
    return "see the original model card"
