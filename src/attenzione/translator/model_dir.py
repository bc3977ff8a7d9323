"""Everything about a model directory: what it holds, how it is written, how it is read.

A model directory is what :class:`~attenzione.translator.translator.Translator` loads and what
training writes as ``last/`` and ``best/``::

    config.json          the ModelConfig (JSON)
    model.safetensors    the weights (safetensors: loading a model never unpickles code)
    src_tokenizer/       the tokenizers the model was trained with, so translation always
    tgt_tokenizer/       tokenizes exactly as training did
    info.json            facts for people: preset, step, scores, data attribution
    tgt_words.txt        optional: the words of the training targets, one per line, sorted
                         (beam search's known words, see attenzione.search.lexicon)
    src_translated.txt   optional: the source words the training pairs always translate (never
                         in a target), one per line, sorted (not free to copy; see
                         attenzione.search.lexicon)
    train_config.json    only in a run's checkpoints: the TrainConfig, for ``--resume``
    training_state.pt    only in ``last/``: optimizer, progress, RNG states (tensors and
                         plain data, loaded with ``weights_only=True``)

This module and :mod:`attenzione.weights` (the config and the tensor files: weights,
snapshots, the memory guard, re-exported here) are the only ones that read or write these
files. A directory is written whole into a temporary sibling and swapped in by
:func:`attenzione.atomic.replace_directory`, so a kill at any instant leaves a complete
checkpoint under ``NAME`` or ``.NAME.old``, and :func:`find_model_dir` finds it. Loading turns
every way a directory can be damaged (missing, truncated or foreign files, weights that
disagree with the config or are not finite, a config no machine could hold, a vocabulary
whose ids the model has no rows for, an ``info.json`` field of the wrong type) into a
``ValueError``/``FileNotFoundError`` that names the file — the CLI prints it as one line.

Every file is read through :func:`~attenzione.weights.member`: a symbolic link that
leads out of the directory is refused (the directory's own path may be a link), and no error
quotes what a file holds, only its name and line, so a directory cannot make an error message
show another file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.jsonfile import read_json, read_json_object
from attenzione.data.tokenizers import Tokenizer, load_tokenizer
from attenzione.interop.legacy import Upgrade, upgrade
from attenzione.model.transformer import Transformer
from attenzione.search.lexicon import words_of
from attenzione.search.shortlist import Shortlist
from attenzione.translator.registry import DEFAULT_PAIR, PRETRAINED_ROOT

# the config and the tensor files, one at a time: attenzione.weights; the names
# the rest of the package uses are re-exported here
from attenzione.weights import CONFIG_NAME as CONFIG_NAME
from attenzione.weights import SNAPSHOTS as SNAPSHOTS
from attenzione.weights import WEIGHTS_NAME as WEIGHTS_NAME
from attenzione.weights import build_model as build_model
from attenzione.weights import check_state as check_state
from attenzione.weights import load_pickled, save_tensors
from attenzione.weights import load_weights_file as load_weights_file
from attenzione.weights import member as member
from attenzione.weights import parameter_count as parameter_count
from attenzione.weights import save_snapshot as save_snapshot
from attenzione.weights import save_weights as save_weights
from attenzione.weights import snapshot_path as snapshot_path
from attenzione.weights import snapshot_steps as snapshot_steps
from attenzione.weights import unshared_state as unshared_state

INFO_NAME = "info.json"
STATE_NAME = "training_state.pt"
TRAIN_CONFIG_NAME = "train_config.json"
WORDS_NAME = "tgt_words.txt"
TRANSLATED_NAME = "src_translated.txt"
SHORTLIST_NAME = "shortlist.safetensors"
SRC_TOKENIZER = "src_tokenizer"
TGT_TOKENIZER = "tgt_tokenizer"
# the shipped model of the default pair (attenzione.translator.registry finds the others)
PRETRAINED_DIR = PRETRAINED_ROOT / "-".join(DEFAULT_PAIR)

# The files a directory needs to be usable: for translation, and for resuming a run.
MODEL_FILES = (CONFIG_NAME, WEIGHTS_NAME, f"{SRC_TOKENIZER}/tokenizer.json",
               f"{TGT_TOKENIZER}/tokenizer.json")  # fmt: skip
RESUME_FILES = (*MODEL_FILES, STATE_NAME, TRAIN_CONFIG_NAME)
# Every name write_model_dir may write: replacing a directory replaces these, and keeps the rest
WRITTEN_NAMES = (CONFIG_NAME, WEIGHTS_NAME, SRC_TOKENIZER, TGT_TOKENIZER, INFO_NAME, STATE_NAME,
                 TRAIN_CONFIG_NAME, WORDS_NAME, TRANSLATED_NAME, SHORTLIST_NAME)  # fmt: skip


# ---------------------------------------------------------------------------- config and model
def read_upgrade(directory: str | Path) -> Upgrade:
    """``directory/config.json`` as the core reads it now, and what its weights need on the way
    in (an older version's layout: :mod:`attenzione.interop.legacy`); a damaged file is a
    ValueError."""
    path = member(directory, CONFIG_NAME)
    data = read_json(path)  # its errors name the file
    try:
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        found = upgrade(data)
        ModelConfig.from_dict(found.config)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a valid model config: {exc}") from None
    return found


def read_config(directory: str | Path) -> ModelConfig:
    """The :class:`ModelConfig` in ``directory/config.json``; a damaged file is a ValueError."""
    return ModelConfig.from_dict(read_upgrade(directory).config)


def load_model(directory: str | Path, *, map_location: str = "cpu") -> Transformer:
    """Build the model of ``config.json`` and load ``model.safetensors`` into it (a model an
    older version saved in another layout is brought into today's: :func:`read_upgrade`).

    Never unpickles, never follows a link out of ``directory`` (:func:`member`). Every
    mismatch between the two files, and a NaN or an infinity in the weights, is reported with
    the file's name (and the tensor's).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory {directory} does not exist")
    for name in (CONFIG_NAME, WEIGHTS_NAME):
        if not member(directory, name).is_file():
            raise FileNotFoundError(f"{directory / name} not found: not a model directory")
    found = read_upgrade(directory)
    cfg = ModelConfig.from_dict(found.config)
    model = build_model(cfg, str(directory / CONFIG_NAME))
    weights = member(directory, WEIGHTS_NAME)
    state = load_weights_file(weights, map_location)
    check_state(model, state, str(weights))
    state = found.weights(state, cfg)
    own = model.state_dict()
    state = {k: v.to(own[k].dtype) for k, v in state.items()}
    model.load_state_dict(state, strict=False)
    return model


def is_complete(directory: Path, required: tuple[str, ...] = MODEL_FILES) -> bool:
    """Whether every file in ``required`` is present in ``directory``."""
    return all((directory / name).is_file() for name in required)


# ---------------------------------------------------------------------------- the other files
def weights_bytes(directory: str | Path) -> int:
    """The bytes of a model directory's weight files (what loading it puts in memory, about):
    read from the file sizes, nothing loaded."""
    return sum(p.stat().st_size for p in Path(directory).rglob("*.safetensors") if p.is_file())


def load_tokenizers(
    directory: str | Path, cfg: ModelConfig | None = None
) -> tuple[Tokenizer, Tokenizer]:
    """The source and target tokenizers of ``directory``.

    With ``cfg``, also check that the tokenizers' special-token ids are the ones the model was
    built with (``pad_id`` …): a mismatch would decode silently wrong, so it is an error.
    """
    directory = Path(directory)
    toks = []
    for name in (SRC_TOKENIZER, TGT_TOKENIZER):
        # the folder and its config inside the directory; load_tokenizer keeps the files the
        # config names inside the folder
        member(directory, f"{name}/tokenizer.json")
        tok = load_tokenizer(member(directory, name))
        if cfg is not None:
            theirs = (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id)
            ours = (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id)
            if theirs != ours:
                raise ValueError(
                    f"{directory / name} numbers its special tokens (pad, bos, eos, unk) "
                    f"{theirs} but {directory / CONFIG_NAME} says {ours}"
                )
        toks.append(tok)
    if cfg is not None:
        check_vocabularies(cfg, toks[0], toks[1], f"the model of {directory / CONFIG_NAME}")
    return toks[0], toks[1]


def check_vocabularies(
    cfg: ModelConfig, src_tok: Tokenizer, tgt_tok: Tokenizer, model: str = "the model"
) -> None:
    """A ValueError naming the tokenizer's file unless every id each tokenizer can give is a
    row of the model's embeddings (``src_vocab_size``, ``tgt_vocab_size``).

    A vocabulary that numbers a piece past the rows would crash the first sentence that holds
    it (an IndexError, a 500 that fails the service's whole batch), and one whose ids reach a
    billion made loading walk a billion pieces. A tokenizer of fewer ids than rows is fine:
    the rows it never gives are never read. Run at load and before a directory is written
    (``attenzione import``, training), so no model directory of that kind is ever written."""
    sides = (
        ("source", src_tok, cfg.src_vocab_size, "src_vocab_size"),
        ("target", tgt_tok, cfg.tgt_vocab_size, "tgt_vocab_size"),
    )
    for side, tok, rows, field in sides:
        if tok.vocab_size > rows:
            where = tok.origin or f"the {side} tokenizer"
            raise ValueError(
                f"{where} numbers its pieces up to id {tok.vocab_size - 1}, but {model} has "
                f"{rows} rows for them ({field} {rows}): every id must be a row of the model"
            )


def read_info(directory: str | Path) -> dict[str, Any]:
    """``info.json`` as a dict ({} if absent); a damaged file, or a field the package reads
    that is not of its type (:data:`INFO_FIELDS`), is a ValueError naming the field."""
    path = member(directory, INFO_NAME)
    if not path.is_file():
        return {}
    info = read_json_object(path)
    for field, (ok, what) in INFO_FIELDS.items():
        value = info.get(field)
        if field in info and not (ok(value) or (value is None and field not in NOT_NULL)):
            raise ValueError(f"{path}: {field} must be {what}, not {_brief(value)}")
    return info


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# The fields of info.json the package computes with or prints, and what each must be (in the
# words of the error): null is "not recorded" (NOT_NULL: the fields null means nothing for)
INFO_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "parameters": (lambda v: _count(v, 0), "a whole number >= 0"),
    "max_src_tokens": (lambda v: _count(v, 1), "a whole number >= 1"),
    "step": (lambda v: _count(v, 0), "a whole number >= 0"),
    "corpora": (_strings, "a list of corpus names (strings)"),
    "tags": (_strings, "a list of corpus tags (strings)"),
    **{
        name: ((lambda v: isinstance(v, str)), "a string")
        for name in (
            "data",
            "source_language",
            "target_language",
            "number_format",
            "default_tag",
            "preset",
            "attribution",
            "licence",
        )
    },
}
NOT_NULL = frozenset({"max_src_tokens"})


def _brief(value: Any) -> str:
    """``value`` as an error shows it: a short repr, or its type's name when long."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else f"a JSON {type(value).__name__}"


def read_words(directory: str | Path, name: str = WORDS_NAME) -> list[str] | None:
    """The known words of ``tgt_words.txt`` (or the translated source words of
    ``src_translated.txt``, ``name``), sorted (None if the directory has none); a file that is
    not UTF-8, or not one lowercased word per line, is a ValueError naming the line, not
    quoting it."""
    path = member(directory, name)
    if not path.is_file():
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    for n, line in enumerate(lines, 1):
        if words_of(line) != [line]:
            raise ValueError(
                f"{path}, line {n} {_word_problem(line)}: a word list holds one lowercased "
                "word per line"
            )
    if not lines:
        raise ValueError(f"{path} is empty: a word list needs the words of the training pairs")
    return sorted(set(lines))


def _word_problem(line: str) -> str:
    """What is wrong with a line of a word list, in words that do not repeat it."""
    if not line.strip():
        return "is blank"
    if len(line.split()) > 1:
        return "holds more than one word"
    if line != line.lower():
        return "is not lowercased"
    return "is not a word (letters only)"


def read_shortlist(directory: str | Path, cfg: ModelConfig) -> Shortlist | None:
    """The vocabulary shortlist of ``shortlist.safetensors`` (None if the directory has none);
    a damaged file, or one that does not fit the model's vocabularies, is a ValueError."""
    path = member(directory, SHORTLIST_NAME)
    if not path.is_file():
        return None
    tensors = load_weights_file(path)
    missing = {"frequent", "table"} - set(tensors)
    if missing:
        raise ValueError(f"{path} lacks {', '.join(sorted(missing))}: not a shortlist")
    shortlist = Shortlist(frequent=tensors["frequent"], table=tensors["table"])
    shortlist.check(cfg.src_vocab_size, cfg.tgt_vocab_size, str(path))
    return shortlist


def write_shortlist(directory: str | Path, shortlist: Shortlist) -> Path:
    """Write ``shortlist.safetensors`` into ``directory`` (atomically)."""
    tensors = {
        "frequent": shortlist.frequent.to(torch.int32).contiguous(),
        "table": shortlist.table.to(torch.int32).contiguous(),
    }
    return save_tensors(Path(directory) / SHORTLIST_NAME, tensors)


def load_state(directory: str | Path) -> dict[str, Any]:
    """The resumable training state (tensors, numbers, dicts only: ``weights_only=True``)."""
    path = member(directory, STATE_NAME)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this checkpoint cannot be resumed")
    state = load_pickled(path, "a training state")
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a training state: it holds a {type(state).__name__}")
    return state


# ---------------------------------------------------------------------------- the writer
def write_model_dir(
    directory: str | Path,
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    *,
    info: dict[str, Any] | None = None,
    state: dict[str, Any] | None = None,
    extra_files: dict[str, str] | None = None,
    words: Sequence[str] | None = None,
    translated: Sequence[str] | None = None,
    dtype: torch.dtype | None = None,
    shortlist: Shortlist | None = None,
    on_step: Callable[[str], None] | None = None,
) -> Path:
    """Write a complete model directory at ``directory``, replacing any previous one atomically.

    ``state`` adds ``training_state.pt``; ``extra_files`` maps names to text written alongside
    (the trainer's ``train_config.json``), inside the same swap, so a checkpoint never becomes
    visible without them. ``words`` writes ``tgt_words.txt`` and ``translated``
    ``src_translated.txt`` (see :func:`read_words`), ``shortlist`` ``shortlist.safetensors``.
    """
    check_vocabularies(model.config, src_tok, tgt_tok)  # a directory loading would refuse
    required = MODEL_FILES + ((STATE_NAME,) if state is not None else ())
    required += tuple(extra_files or {})

    def fill(tmp: Path) -> None:
        save_weights(tmp, model, dtype)
        src_tok.save(tmp / SRC_TOKENIZER)
        tgt_tok.save(tmp / TGT_TOKENIZER)
        atomic.write_text(tmp / INFO_NAME, json.dumps(info or {}, indent=2) + "\n")
        for name, text in (extra_files or {}).items():
            atomic.write_text(tmp / name, text)
        # no translated words (data too small to have seen a word twice) is no file: the same
        # check, and an empty list is read as a damaged file
        for name, listed in ((WORDS_NAME, words), (TRANSLATED_NAME, translated or None)):
            if listed is not None:
                atomic.write_text(tmp / name, "".join(w + "\n" for w in sorted(set(listed))))
        if shortlist is not None:
            write_shortlist(tmp, shortlist)
        if state is not None:
            atomic.write_file(tmp / STATE_NAME, lambda p: torch.save(state, p))

    owned = frozenset(WRITTEN_NAMES).union(extra_files or {})
    return atomic.replace_directory(
        directory,
        fill,
        complete=lambda d: is_complete(d, required),
        replaceable=is_complete,  # a model directory (a checkpoint of an older layout too)
        owned=owned.__contains__,  # a file the user added to the directory stays
        on_step=on_step,
    )


def find_model_dir(directory: str | Path, *, resumable: bool = False) -> Path | None:
    """The complete checkpoint at ``directory``, or its hidden ``.NAME.old`` twin after a crash.

    ``resumable`` also requires the files ``--resume`` needs (state and train config).
    """
    required = RESUME_FILES if resumable else MODEL_FILES
    return atomic.find_complete(directory, lambda d: is_complete(d, required))
