"""Installing a language pair by name: ``attenzione models install en de`` and ``remove``.

An install downloads the OPUS-MT model of the pair from the Hugging Face hub
(``Helsinki-NLP/opus-mt-SRC-TGT``, or the hub id a user names: a ``tc-big`` model, a
multilingual one read with its language token), imports it exactly into our Transformer
(:mod:`attenzione.interop.marian`) and writes an ordinary model directory into the user model
folder (:func:`attenzione.translator.registry.install_dir`), named after the pair, where
``translate``, ``evaluate``, ``attention`` and ``serve`` find it with no other setting. The
download is huggingface_hub's, so ``HF_HUB_OFFLINE=1`` installs from its local cache and the
tests need no network.

Its ``info.json`` records that this command wrote it (``installed_by``): ``remove`` deletes
only such a directory — never a model a user trained or put there by hand, nor a shipped one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from attenzione.translator import registry

#: what an install writes into the model's info.json, so that remove knows it is ours
INSTALLED_BY = "attenzione models install"


def opus_id(source: str, target: str) -> str:
    """The hub id of the OPUS-MT model of a pair."""
    return f"Helsinki-NLP/opus-mt-{source}-{target}"


def install(
    source: str,
    target: str,
    *,
    hub_id: str | None = None,
    token: str | None = None,
    force: bool = False,
    into: Path | None = None,
) -> registry.InstalledModel:
    """Download, import and install the model of ``source`` → ``target`` (the module
    docstring); ``token``: the language token a multilingual model reads before the text
    (``>>ita<<``); ``force``: replace a model this command installed before; ``into``: the
    folder (default :func:`~attenzione.translator.registry.install_dir`). Every failure is
    one line (ValueError)."""
    from attenzione import interop
    from attenzione.interop import hub
    from attenzione.translator.model_dir import is_complete, write_model_dir

    source, target = source.strip().lower(), target.strip().lower()
    for code in (source, target):
        if not (code.isascii() and code.isalpha() and 2 <= len(code) <= 3):
            raise ValueError(f"{code!r} is not a language code (two or three letters: en, de)")
    if source == target:
        raise ValueError(f"{source}→{target}: a pair needs two languages")
    folder = (into or registry.install_dir()).expanduser()
    out = folder / f"{source}-{target}"
    if out.exists():
        ours = is_complete(out) and _ours(out)
        if not ours:
            raise ValueError(
                f"{out} exists and was not installed by this command: move it away, or give "
                "ATTENZIONE_MODELS another folder"
            )
        if not force:
            raise ValueError(f"{source}-{target} is installed already ({out}): --force replaces it")
    repo = hub_id or opus_id(source, target)
    try:
        directory = hub.download(repo)
    except ValueError as exc:
        said = str(exc).split("; without internet")[0]
        hint = (
            f"the hub may not have {repo} (OPUS-MT's pairs are at huggingface.co/Helsinki-NLP;"
            " --model names another)"
            if hub_id is None
            else "check the hub id"
        )
        raise ValueError(
            f"{said}: {hint}; offline, a model in the Hugging Face cache installs with "
            f"HF_HUB_OFFLINE=1, and a downloaded directory with attenzione import DIR --out {out}"
        ) from None
    found = interop.load(directory, origin=repo, pair=(source, target))
    info: dict[str, Any] = dict(found.info)
    tags = tuple(getattr(found.src_tokenizer, "tags", ()))
    if token is not None:
        if token not in tags:
            have = ", ".join(tags[:8]) + (" …" if len(tags) > 8 else "") if tags else "none"
            raise ValueError(f"{repo} has no language token {token!r} (it has: {have})")
        info["default_tag"] = token
    elif tags:
        raise ValueError(
            f"{repo} is multilingual: give the target's language token with --token (one of "
            f"{', '.join(tags[:8])}{' …' if len(tags) > 8 else ''})"
        )
    info["installed_by"] = INSTALLED_BY
    folder.mkdir(parents=True, exist_ok=True)
    write_model_dir(out, found.model, found.src_tokenizer, found.tgt_tokenizer, info=info)
    return registry.InstalledModel(source, target, out, False, info)


def _ours(path: Path) -> bool:
    info = registry._read_info(path)
    return info.get("installed_by") == INSTALLED_BY


def remove(source: str, target: str) -> Path:
    """Delete the installed model of ``source`` → ``target`` if this command installed it;
    one line (ValueError) for a shipped model, a user's own, or none."""
    source, target = source.strip().lower(), target.strip().lower()
    pair = f"{source}-{target}"
    model = next((m for m in registry.installed() if m.pair == pair), None)
    if model is None:
        raise ValueError(f"no model of {source}→{target} is installed")
    if model.shipped:
        raise ValueError(f"{pair} is shipped inside the package: it cannot be removed")
    if not _ours(model.path):
        raise ValueError(
            f"{model.path} was not installed by 'attenzione models install': remove it yourself"
        )
    shutil.rmtree(model.path)
    return model.path
