"""Everything about a model directory: what it holds, how it is written, how it is read.

A model directory is what :class:`~attenzione.translator.translator.Translator` loads and what
training
writes as ``last/`` and ``best/``::

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

This module is the only one that reads or writes these files. A directory is written whole
into a temporary sibling and swapped in by :func:`attenzione.atomic.replace_directory`, so a
kill at any instant leaves a complete checkpoint under ``NAME`` or ``NAME.old``, and
:func:`find_model_dir` finds it. Loading turns every way a directory can be damaged (missing,
truncated or foreign files, weights that disagree with the config, a config no machine could
hold) into a ``ValueError``/``FileNotFoundError`` that names the file — the CLI prints it as
one line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.tokenizers import Tokenizer, load_tokenizer
from attenzione.model.transformer import Transformer
from attenzione.search.lexicon import words_of
from attenzione.search.shortlist import Shortlist
from attenzione.translator.registry import DEFAULT_PAIR, PRETRAINED_ROOT

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
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


def is_complete(directory: Path, required: tuple[str, ...] = MODEL_FILES) -> bool:
    """Whether every file in ``required`` is present in ``directory``."""
    return all((directory / name).is_file() for name in required)


# ---------------------------------------------------------------------------- memory guard
def parameter_count(cfg: ModelConfig) -> int:
    """The number of parameters a :class:`Transformer` with ``cfg`` has (exact, no build).

    Used to refuse a config before allocating it: a ``d_model`` of 1e9 would otherwise try a
    multi-terabyte allocation and die with an allocator message instead of a sentence.
    """
    d, inner, f = cfg.d_model, cfg.inner_dim, cfg.d_ff
    attn = d * 3 * inner + 3 * inner + inner * d + d  # qkv_proj + out_proj (weights, biases)
    ffn = d * f + f + f * d + d
    norm = 2 * d
    enc = cfg.n_enc_layers * (attn + ffn + 2 * norm)
    dec = cfg.n_dec_layers * (2 * attn + ffn + 3 * norm)
    e = cfg.src_embed_dim or d
    src = cfg.src_vocab_size * e + (0 if e == d else e * d)  # + projection (no bias)
    tgt = 0 if cfg.share_src_tgt_embeddings else cfg.tgt_vocab_size * d
    gen = 0 if cfg.tie_embeddings else cfg.tgt_vocab_size * d
    learned_pos = cfg.max_len * d if cfg.positions == "learned" else 0
    final_norms = 2 * norm if cfg.norm == "pre" else 0
    return enc + dec + src + tgt + gen + learned_pos + final_norms


def physical_memory() -> int | None:
    """Bytes of RAM on this machine, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # pragma: no cover - the loop always returns


def check_fits_memory(cfg: ModelConfig, where: str = "the config") -> None:
    """Raise ``ValueError`` (with the figures) if ``cfg``'s fp32 weights exceed this RAM."""
    need = 4 * parameter_count(cfg)
    have = physical_memory()
    if have is not None and need > have:
        raise ValueError(
            f"{where} describes a model of {parameter_count(cfg):,} parameters "
            f"(d_model={cfg.d_model}, d_ff={cfg.d_ff}, vocabularies {cfg.src_vocab_size}/"
            f"{cfg.tgt_vocab_size}): its fp32 weights alone need {_size(need)}, and this "
            f"machine has {_size(have)}"
        )


def build_model(cfg: ModelConfig, where: str = "the config") -> Transformer:
    """A fresh :class:`Transformer` for ``cfg``, refused with a sentence if it cannot fit."""
    check_fits_memory(cfg, where)
    return Transformer(cfg)


# ---------------------------------------------------------------------------- weights
def _tied_names(model: nn.Module) -> set[str]:
    """State-dict names that alias an earlier tensor (tied or shared embeddings)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, t in model.state_dict(keep_vars=True).items():
        if t.data_ptr() in seen:
            tied.add(name)
        else:
            seen[t.data_ptr()] = name
    return tied


def unshared_state(model: nn.Module, dtype: torch.dtype | None) -> dict[str, Tensor]:
    """The state dict without aliases (safetensors stores each tensor once), optionally cast."""
    tied = _tied_names(model)
    out = {}
    for name, t in model.state_dict().items():
        if name in tied:
            continue
        t = t.detach()
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        out[name] = t.cpu().contiguous()
    return out


def save_weights(
    directory: str | Path, model: Transformer, dtype: torch.dtype | None = None
) -> None:
    """Write ``config.json`` and ``model.safetensors`` into ``directory`` (each atomically).

    ``dtype`` (e.g. ``torch.float16``) stores the weights at a smaller precision; they are
    cast back to the model's dtype (float32) on load.
    """
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = unshared_state(model, dtype)
    atomic.write_file(directory / WEIGHTS_NAME, lambda p: save_file(state, str(p)))
    atomic.write_text(directory / CONFIG_NAME, model.config.to_json() + "\n")


def read_config(directory: str | Path) -> ModelConfig:
    """The :class:`ModelConfig` in ``directory/config.json``; a damaged file is a ValueError."""
    path = Path(directory) / CONFIG_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        return ModelConfig.from_dict(data)
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a valid model config: {exc}") from None


def load_model(directory: str | Path, *, map_location: str = "cpu") -> Transformer:
    """Build the model of ``config.json`` and load ``model.safetensors`` into it.

    Never unpickles. Every mismatch between the two files is reported with the file's name.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"model directory {directory} does not exist")
    for name in (CONFIG_NAME, WEIGHTS_NAME):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"{directory / name} not found: not a model directory")
    cfg = read_config(directory)
    model = build_model(cfg, str(directory / CONFIG_NAME))
    weights = directory / WEIGHTS_NAME
    state = load_weights_file(weights, map_location)
    check_state(model, state, str(weights))
    own = model.state_dict()
    state = {k: v.to(own[k].dtype) for k, v in state.items()}
    model.load_state_dict(state, strict=False)
    return model


def check_state(model: nn.Module, state: dict[str, Tensor], where: str) -> None:
    """A ValueError naming ``where`` unless ``state`` holds exactly the model's (untied)
    tensors, each with the model's shape."""
    own = model.state_dict()
    tied = _tied_names(model)
    missing = [k for k in own if k not in state and k not in tied]
    unexpected = [k for k in state if k not in own]
    wrong = [
        f"{k} {tuple(v.shape)} (config.json needs {tuple(own[k].shape)})"
        for k, v in state.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    if missing or unexpected or wrong:
        problems = []
        if wrong:
            problems.append(f"shapes {', '.join(wrong[:3])}")
        if missing:
            problems.append(f"missing {missing[:5]}")
        if unexpected:
            problems.append(f"unexpected {unexpected[:5]}")
        raise ValueError(f"{where} does not match {CONFIG_NAME}: {'; '.join(problems)}")


# ---------------------------------------------------------------------------- tokenizers, info
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
        tok = load_tokenizer(directory / name)
        if cfg is not None:
            theirs = (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id)
            ours = (cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id)
            if theirs != ours:
                raise ValueError(
                    f"{directory / name} numbers its special tokens (pad, bos, eos, unk) "
                    f"{theirs} but {directory / CONFIG_NAME} says {ours}"
                )
        toks.append(tok)
    return toks[0], toks[1]


def read_info(directory: str | Path) -> dict[str, Any]:
    """``info.json`` as a dict ({} if absent); a damaged file is a ValueError."""
    path = Path(directory) / INFO_NAME
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(info, dict):
        raise ValueError(f"{path} should hold a JSON object, not {type(info).__name__}")
    return info


def read_words(directory: str | Path, name: str = WORDS_NAME) -> list[str] | None:
    """The known words of ``tgt_words.txt`` (or the translated source words of
    ``src_translated.txt``, ``name``), sorted (None if the directory has none); a file that is
    not UTF-8, or not one lowercased word per line, is a ValueError."""
    path = Path(directory) / name
    if not path.is_file():
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text: {exc}") from None
    for n, line in enumerate(lines, 1):
        if words_of(line) != [line]:
            raise ValueError(f"{path}, line {n}: {line!r} is not one lowercased word")
    if not lines:
        raise ValueError(f"{path} is empty: a word list needs the words of the training pairs")
    return sorted(set(lines))


def read_shortlist(directory: str | Path, cfg: ModelConfig) -> Shortlist | None:
    """The vocabulary shortlist of ``shortlist.safetensors`` (None if the directory has none);
    a damaged file, or one that does not fit the model's vocabularies, is a ValueError."""
    path = Path(directory) / SHORTLIST_NAME
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
    from safetensors.torch import save_file

    path = Path(directory) / SHORTLIST_NAME
    tensors = {
        "frequent": shortlist.frequent.to(torch.int32).contiguous(),
        "table": shortlist.table.to(torch.int32).contiguous(),
    }
    atomic.write_file(path, lambda p: save_file(tensors, str(p)))
    return path


def load_state(directory: str | Path) -> dict[str, Any]:
    """The resumable training state (tensors, numbers, dicts only: ``weights_only=True``)."""
    path = Path(directory) / STATE_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: this checkpoint cannot be resumed")
    state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
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

    return atomic.replace_directory(
        directory, fill, complete=lambda d: is_complete(d, required), on_step=on_step
    )


def find_model_dir(directory: str | Path, *, resumable: bool = False) -> Path | None:
    """The complete checkpoint at ``directory``, or its ``.old`` twin after a crash.

    ``resumable`` also requires the files ``--resume`` needs (state and train config).
    """
    required = RESUME_FILES if resumable else MODEL_FILES
    return atomic.find_complete(directory, lambda d: is_complete(d, required))


# ---------------------------------------------------------------------------- snapshots
# A run's snapshots are bare weight files, RUN/snapshots/step-N.safetensors, one per save of
# last/ (attenzione.training.averaging averages them); the config and tokenizers are last/'s.
SNAPSHOTS = "snapshots"
_SNAPSHOT = re.compile(r"^step-(\d+)\.safetensors$")


def snapshot_path(run_dir: str | Path, step: int) -> Path:
    return Path(run_dir) / SNAPSHOTS / f"step-{step}.safetensors"


def snapshot_steps(run_dir: str | Path) -> list[int]:
    """The steps of the snapshots a run holds, oldest first."""
    folder = Path(run_dir) / SNAPSHOTS
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _SNAPSHOT.match(p.name)))


def save_snapshot(run_dir: str | Path, model: nn.Module, step: int, keep: int) -> Path:
    """Write the weights as the snapshot of ``step`` (atomically); keep the last ``keep``."""
    from safetensors.torch import save_file

    path = snapshot_path(run_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = unshared_state(model, None)
    atomic.write_file(path, lambda p: save_file(state, str(p)))
    for old in snapshot_steps(run_dir)[:-keep]:
        snapshot_path(run_dir, old).unlink(missing_ok=True)
    return path


def load_weights_file(path: str | Path, map_location: str = "cpu") -> dict[str, Tensor]:
    """The tensors of one weights file; a damaged file is a ValueError."""
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device=map_location)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found") from None
    except Exception as exc:  # safetensors raises its own error types for damaged files
        raise ValueError(f"{path} is not a readable safetensors file ({exc})") from None
