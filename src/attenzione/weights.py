"""A network in files: its tensors (safetensors), checked, and the model of a config.

What :mod:`attenzione.translator.model_dir` and the importers (:mod:`attenzione.interop`)
share to turn a :class:`Transformer` into files and back, one file at a time: the weights of
a model directory, a run's bare snapshots (``RUN/snapshots/step-N.safetensors``) and any
other tensor file (the shortlist). Every
tensor file is safetensors, so loading never unpickles code; a file is written atomically
(:mod:`attenzione.atomic`). What a *directory* holds besides (tokenizers, ``info.json``, word
lists, training state), the writer that swaps a whole one in and the search for a complete
one are :mod:`~attenzione.translator.model_dir`'s, which re-exports the names here.

Loading turns every way these files can be damaged (missing, truncated or foreign files,
weights that disagree with the config, hold a NaN or an infinity or are of a type no network
computes in, a config no machine could hold, a link out of the directory, a pickle of more
than tensors) into a ``ValueError``/``FileNotFoundError`` that names the file and never quotes
its content.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from attenzione import atomic
from attenzione.config import ModelConfig
from attenzione.data.jsonfile import member as member
from attenzione.model.transformer import Transformer

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
# The floating-point types torch computes a network in: any other tensor in a weights file
# (bool, int64, float8, complex) is refused, never cast into a model
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Bytes per element of the sinusoid table at its peak while it is built: float64 angles,
# sines and cosines, the float64 table and its float32 copy (model/positional.py)
SINUSOID_BYTES = 24


# ---------------------------------------------------------------------------- memory guard
def parameter_count(cfg: ModelConfig) -> int:
    """The number of parameters a :class:`Transformer` with ``cfg`` has (exact, no build).

    Used to refuse a config before allocating it: a ``d_model`` of 1e9 would otherwise try a
    multi-terabyte allocation and die with an allocator message instead of a sentence.
    """
    d, inner, f = cfg.d_model, cfg.inner_dim, cfg.d_ff
    attn = d * 3 * inner + 3 * inner + inner * d + d  # q/k/v_proj + out_proj (weights, biases)
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
    out_bias = cfg.tgt_vocab_size if cfg.output_bias else 0  # Marian's final_logits_bias
    return enc + dec + src + tgt + gen + learned_pos + final_norms + out_bias


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


def memory_needed(cfg: ModelConfig) -> int:
    """Bytes that building a :class:`Transformer` with ``cfg`` takes at its peak: its fp32
    parameters and every buffer it builds besides — the sinusoid position table of
    ``max_len`` rows, built in float64 (:data:`SINUSOID_BYTES` an element)."""
    table = cfg.max_len * cfg.d_model if cfg.positions == "sinusoidal" else 0
    return 4 * parameter_count(cfg) + SINUSOID_BYTES * table


def check_fits_memory(cfg: ModelConfig, where: str = "the config") -> None:
    """Raise ``ValueError`` (with the figures) if building ``cfg``'s model would take more
    than this machine's RAM (:func:`memory_needed`): called before anything is allocated."""
    need = memory_needed(cfg)
    have = physical_memory()
    if have is not None and need > have:
        raise ValueError(
            f"{where} describes a model of {parameter_count(cfg):,} parameters "
            f"(d_model={cfg.d_model}, d_ff={cfg.d_ff}, vocabularies {cfg.src_vocab_size}/"
            f"{cfg.tgt_vocab_size}, max_len={cfg.max_len}): its fp32 weights and position "
            f"table need {_size(need)}, and this machine has {_size(have)}"
        )


def build_model(cfg: ModelConfig, where: str = "the config") -> Transformer:
    """A fresh :class:`Transformer` for ``cfg``, refused with a sentence if it cannot fit."""
    check_fits_memory(cfg, where)
    return Transformer(cfg)


# ---------------------------------------------------------------------------- tensor files
def save_tensors(path: str | Path, tensors: dict[str, Tensor]) -> Path:
    """Write ``tensors`` as one safetensors file at ``path`` (atomically)."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    def write(tmp: Path) -> None:
        try:
            save_file(tensors, str(tmp))
        except SafetensorError as exc:  # its I/O errors (a full disk …) as the OSError they are
            code = re.search(r"os error (\d+)", str(exc))
            if code is None:
                raise
            raise OSError(int(code[1]), os.strerror(int(code[1])), str(path)) from None

    atomic.write_file(Path(path), write)
    return Path(path)


def load_weights_file(path: str | Path, map_location: str = "cpu") -> dict[str, Tensor]:
    """The tensors of one weights file, under the names the model has now
    (:func:`current_names`); a damaged file, or one whose floating-point tensors hold a NaN or
    an infinity (:func:`check_finite`), is a ValueError."""
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path), device=map_location)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found") from None
    except Exception as exc:  # safetensors raises its own error types for damaged files
        raise ValueError(f"{path} is not a readable safetensors file ({exc})") from None
    check_finite(tensors, str(path))
    return current_names(tensors)


def check_finite(tensors: dict[str, Tensor], where: str) -> None:
    """A ValueError naming ``where`` and the first tensor that holds a NaN or an infinity.

    A network with one NaN in a weight does not fail: it translates garbage ("sviluppo
    sviluppo …") with every sign of success, so a damaged file is refused where it is read.
    Each tensor is summed first (in float32, or float64 for float64 tensors): a NaN or an
    infinity makes the sum non-finite, and the sums of the shipped model's 127 tensors take
    6–7 ms where ``isfinite`` over every element takes 65–120 (fp16 weights, 18.8M values).
    Only a non-finite sum is looked at element by element, so finite weights whose sum
    overflows (values near 1e38) still load. The sums run on one thread: a second buys nothing
    on sums this size and costs an OpenMP barrier per tensor, 680 ms in all with the other
    core busy (issue 53).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        sums = {
            name: bool(torch.isfinite(t.sum(dtype=_accumulator(t))))
            for name, t in tensors.items()
            if t.dtype in FLOAT_DTYPES  # the others: check_dtypes refuses them in weights
        }
    finally:
        torch.set_num_threads(threads)
    for name, finite in sums.items():
        if finite:
            continue
        t = tensors[name]
        bad = ~torch.isfinite(t)
        n = int(bad.sum())
        if n == 0:  # finite values whose sum overflowed
            continue
        first = float(t[bad].view(-1)[0])
        what = "NaN" if first != first else "inf" if first > 0 else "-inf"
        raise ValueError(
            f"{where}: tensor {name} holds {what} ({n:,} of {t.numel():,} values not finite): "
            "the file is damaged"
        )


def _accumulator(t: Tensor) -> torch.dtype:
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def check_dtypes(tensors: dict[str, Tensor], where: str) -> None:
    """A ValueError naming ``where`` and the first tensor that is not of a floating-point
    type torch computes a network in (:data:`FLOAT_DTYPES`): a bool or int64 weight would be
    cast into the model without a word, a float8 one fails in torch's arithmetic."""
    for name, t in tensors.items():
        if t.dtype not in FLOAT_DTYPES:
            kind = str(t.dtype).removeprefix("torch.")
            raise ValueError(
                f"{where}: tensor {name} is {kind}: a model's weights are float32, float16, "
                "bfloat16 or float64"
            )


def load_pickled(path: Path, what: str) -> Any:
    """What the pickle at ``path`` holds, read with ``weights_only=True`` (tensors, numbers,
    strings, lists and dicts: no code runs); anything else is a ValueError naming ``path`` as
    not ``what``, in one line (torch's refusal is a paragraph that advises unpickling code)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found") from None
    except pickle.UnpicklingError:
        raise ValueError(
            f"{path} is not {what}: it pickles Python objects other than tensors, which are "
            "never unpickled here (they could run code)"
        ) from None
    except Exception as exc:  # a truncated archive, a foreign file …: its first line
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise ValueError(
            f"{path} is not {what} ({type(exc).__name__}{': ' + first if first else ''})"
        ) from None


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
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_tensors(directory / WEIGHTS_NAME, unshared_state(model, dtype))
    atomic.write_text(directory / CONFIG_NAME, model.config.to_json() + "\n")


# A checkpoint written before the reference split W^Q, W^K, W^V (issue 65) stores them
# stacked, rows [Q; K; V], as ``….qkv_proj.weight`` / ``.bias``.
_STACKED = re.compile(r"^(.*\.(?:self_attn|cross_attn))\.qkv_proj\.(weight|bias)$")


def current_names(state: dict[str, Tensor]) -> dict[str, Tensor]:
    """``state`` under the names the model has now: the one key map at load. A stacked Q/K/V
    tensor of an older checkpoint becomes the three it stacks (its rows cut in three), so
    every saved model and snapshot keeps loading; anything else is as it was."""
    out: dict[str, Tensor] = {}
    for name, tensor in state.items():
        found = _STACKED.match(name)
        if found is None or tensor.shape[0] % 3:
            out[name] = tensor
            continue
        attn, kind = found.groups()
        for part, piece in zip("qkv", tensor.chunk(3, dim=0), strict=True):
            out[f"{attn}.{part}_proj.{kind}"] = piece.contiguous()
    return out


def check_state(model: nn.Module, state: dict[str, Tensor], where: str) -> None:
    """A ValueError naming ``where`` unless ``state`` holds exactly the model's (untied)
    tensors, each with the model's shape and a floating-point type (:func:`check_dtypes`)."""
    check_dtypes(state, where)
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
    path = snapshot_path(run_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_tensors(path, unshared_state(model, None))
    for old in snapshot_steps(run_dir)[:-keep]:
        snapshot_path(run_dir, old).unlink(missing_ok=True)
    return path
