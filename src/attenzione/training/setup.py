"""Setting a run up: its model, the config a resumed run continues with, signals, ranks and
the process group.

Kept apart from the loop (:mod:`attenzione.training.trainer`) because each piece answers a
question asked once per invocation — which model, which settings, which process am I —
while the loop answers "what happens at this step".
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from attenzione.config import ModelConfig, TrainConfig
from attenzione.model.transformer import Transformer
from attenzione.training.data_prep import HELD_OUT, PreparedData, prepare
from attenzione.training.presets import Preset
from attenzione.training.step import process_group_backend, resolve_device
from attenzione.translator import model_dir

# What --resume takes from the command line; every other field is the run's own.
RESUME_MAY_CHANGE = frozenset(
    {
        "out",
        "epochs",
        "max_steps",
        "max_minutes",
        "cooldown",
        "progress",
        "num_threads",
        "device",
        "attribution",
        "save_every_minutes",
        "keep_snapshots",
    }
)
BUDGET = frozenset({"epochs", "max_steps", "max_minutes"})  # when a run stops


def dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@contextmanager
def process_group(device_name: str) -> Iterator[None]:
    """Under ``torchrun`` (``WORLD_SIZE`` > 1) with no process group yet, one for the block
    (NCCL on the local rank's GPU, gloo on the CPU), destroyed after it; else nothing."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        yield
        return
    device = resolve_device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(process_group_backend(device))
    try:
        yield
    finally:
        dist.destroy_process_group()


def find_resume(run_dir: Path, resume: bool) -> Path | None:
    """The checkpoint ``--resume`` continues from (None for a new run); a resume without a
    checkpoint, or a new run into a directory that holds one, is an error."""
    found = model_dir.find_model_dir(run_dir / "last", resumable=True)
    if resume and found is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {run_dir / 'last'}")
    if not resume and found is not None:
        raise ValueError(
            f"{run_dir} already holds a run; pass --resume to continue it or choose another --out"
        )
    return found if resume else None


def prepare_data(
    cfg: TrainConfig,
    preset: Preset,
    run_dir: Path,
    rank: int,
    world: int,
    scaled: frozenset[str] = frozenset(),
) -> PreparedData:
    """The run's data: rank 0 writes the splits and tokenizers (first run); the others then
    read them. A run that fails here leaves no directory it created behind. ``scaled``: the
    held-out sizes left to the corpus (:func:`~attenzione.training.data_prep.held_out_sizes`)."""
    data = None
    if rank == 0:
        created = None  # the first directory this call makes, if it makes any
        for folder in [run_dir, *run_dir.parents]:
            if folder.exists():
                break
            created = folder
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            data = prepare(cfg, preset, run_dir, write=True, scaled=scaled)
        except BaseException:
            if created is not None:  # a run that never started leaves no directory behind
                shutil.rmtree(created, ignore_errors=True)
            raise
    if world > 1:
        dist.barrier()
    if data is None:
        data = prepare(cfg, preset, run_dir, write=False)
    return data


def own_shape(cfg: TrainConfig) -> dict[str, int]:
    """The sizes the run sets itself (``--enc-layers``/``--dec-layers``/``--d-ff``), by their
    ModelConfig names; a warm start may grow the model to these."""
    sizes = {"n_enc_layers": cfg.enc_layers, "n_dec_layers": cfg.dec_layers, "d_ff": cfg.d_ff}
    return {name: size for name, size in sizes.items() if size is not None}


def model_shape(cfg: TrainConfig, preset: Preset) -> dict[str, Any]:
    """The preset's ModelConfig fields with the run's own sizes, when it sets them."""
    return {**preset.model, **own_shape(cfg)}


def build_model(cfg: TrainConfig, preset: Preset, data: PreparedData) -> Transformer:
    """The preset's model for these tokenizers; GloVe-initialised source for ``glove50``.

    The special-token ids come from the tokenizers, so the model and its tokenizers always
    agree on what ``<pad>``, ``<bos>``, ``<eos>`` and ``<unk>`` are.
    """
    kwargs = model_shape(cfg, preset)
    glove = None
    if preset.tokenizer == "glove-word":
        from attenzione.data import embedding_matrix, load_glove

        glove = load_glove(cfg.glove)
        kwargs["d_model"] = glove.dim  # the GloVe design: d_model is the GloVe size
    tok = data.tgt_tok
    mcfg = ModelConfig(
        src_vocab_size=data.src_tok.vocab_size,
        tgt_vocab_size=tok.vocab_size,
        pad_id=tok.pad_id,
        bos_id=tok.bos_id,
        eos_id=tok.eos_id,
        unk_id=tok.unk_id,
        **kwargs,
    )
    model = model_dir.build_model(mcfg, f"preset {preset.name!r}")
    if glove is not None:
        matrix, coverage = embedding_matrix(glove, data.src_tok, seed=cfg.seed)
        model.src_embed.load_pretrained(matrix, freeze=cfg.freeze_embeddings)
        data.notes.append(str(coverage))
    return model


def resumed_config(
    given: TrainConfig, saved: TrainConfig, explicit: set[str] | None
) -> tuple[TrainConfig, list[str]]:
    """The config a resumed run continues with, and a note for each request it ignores.

    ``explicit``: the fields the user actually set (the CLI knows); None takes them all as
    set. A field that may change on resume (budget, threads, snapshots …) takes the value
    given only when it was set: one left out keeps the run's own, so resuming without
    repeating ``--keep-snapshots 4`` does not silently stop the snapshots. The stop
    conditions (``BUDGET``) are one setting: give any and all three are the ones given.
    """
    merged = saved.to_dict()
    notes = []
    # the stop conditions go together: give one and the others are the ones given too (None
    # unless given), so an old --epochs cannot cut short a new --max-steps
    new_budget = explicit is not None and bool(explicit & BUDGET)
    for f in fields(TrainConfig):
        new, old = getattr(given, f.name), getattr(saved, f.name)
        if f.name in RESUME_MAY_CHANGE:
            given_now = explicit is None or f.name in explicit
            if f.name == "out" or given_now or (f.name in BUDGET and new_budget):
                merged[f.name] = new
        elif new != old and (explicit is None or f.name in explicit):
            notes.append(f"{f.name}={old!r} (asked: {new!r})")
    return TrainConfig.from_dict(merged), notes


@contextmanager
def graceful_signals(on_signal: Callable[[str], None]) -> Iterator[None]:
    """While active, SIGTERM / SIGINT call ``on_signal(name)`` instead of killing the process,
    so the loop can finish its step, save ``last/`` and stop (resumable)."""

    def handler(signum: int, _frame: Any) -> None:
        on_signal(signal.Signals(signum).name)

    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def scaled_sizes(cfg: TrainConfig, explicit: set[str] | None) -> frozenset[str]:
    """The held-out sizes (``dev_size``, ``test_size``) the corpus decides: those the user
    did not set. Without ``explicit`` (Python callers), one left at TrainConfig's default."""
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    return frozenset(
        name
        for name in HELD_OUT
        if (name not in explicit if explicit is not None else getattr(cfg, name) == defaults[name])
    )
