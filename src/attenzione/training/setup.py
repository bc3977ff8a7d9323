"""Setting a run up, apart from its model: which process this is (rank, process group, stop
signals), the run directory, the config a resumed run continues with, the seeds, the data and
the order of its batches, and the notes and attribution the run reports.

Kept apart from the loop (:mod:`attenzione.training.trainer`) because each piece answers a
question asked once per invocation — which settings, which data, which process am I — while
the loop answers "what happens at this step". The model and its optimizer are
:mod:`attenzione.training.model_setup`'s.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from attenzione.config import TrainConfig
from attenzione.data import TokenBudgetSampler
from attenzione.data.attribution import run_attribution
from attenzione.data.mixing import CorpusSpec
from attenzione.model.fast.precision import bf16_warning
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
    """This process's rank and the number of processes: (0, 1) outside a process group."""
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


def run_directory(out: str | Path) -> Path:
    """The run directory ``--out`` names (made later, by :func:`prepare_data`); a file there
    is an error."""
    run_dir = Path(out)
    if run_dir.exists() and not run_dir.is_dir():
        raise NotADirectoryError(f"--out {run_dir} is a file, not a run directory")
    return run_dir


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


def continued_config(
    cfg: TrainConfig,
    resume_from: Path | None,
    explicit: set[str] | None,
    log: Callable[[str], object],
) -> TrainConfig:
    """The config the run goes on with: ``cfg`` for a new run; for one resumed from the
    checkpoint ``resume_from``, the run's own with what ``--resume`` may change
    (:func:`resumed_config`), logging in one line the settings asked for and ignored."""
    if resume_from is None:
        return cfg
    saved = TrainConfig.load(resume_from / model_dir.TRAIN_CONFIG_NAME)
    merged, ignored = resumed_config(cfg, saved, explicit)
    if ignored:
        log("--resume keeps the run's settings: " + ", ".join(ignored))
    return merged


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


def check_cooldown(cfg: TrainConfig, log: Callable[[str], object]) -> None:
    """A ``--cooldown`` with nothing to count down (no ``--max-steps``, no ``--max-minutes``)
    is an error; one that ``--epochs`` or ``--patience`` may cut short gets a note. Called
    before the data work, which may take minutes."""
    if cfg.cooldown <= 0:
        return
    if cfg.max_steps is None and cfg.max_minutes is None:
        raise ValueError("--cooldown needs --max-steps or --max-minutes to count down")
    if cfg.epochs is not None or cfg.patience:
        log(
            "note: the cool-down counts down --max-steps/--max-minutes; a run that "
            "--epochs or --patience ends first stops before the rate is down"
        )


def seed_generators(seed: int) -> None:
    """Seed torch's and Python's global random generators (the model's initialisation and
    dropout draw from them). Called before the data work, so that whatever it draws from them
    is seeded too: the same config gives the same run."""
    torch.manual_seed(seed)
    random.seed(seed)


def scaled_sizes(cfg: TrainConfig, explicit: set[str] | None) -> frozenset[str]:
    """The held-out sizes (``dev_size``, ``test_size``) the corpus decides: those the user
    did not set. Without ``explicit`` (Python callers), one left at TrainConfig's default."""
    defaults = {f.name: f.default for f in fields(TrainConfig)}
    return frozenset(
        name
        for name in HELD_OUT
        if (name not in explicit if explicit is not None else getattr(cfg, name) == defaults[name])
    )


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


def with_held_out(cfg: TrainConfig, data: PreparedData) -> TrainConfig:
    """``cfg`` with the held-out sizes the split was made with, when this call made it (a
    size left to the corpus is known only then), so the config the run saves says what was
    held out."""
    if data.held_out is None:
        return cfg
    dev_size, test_size = data.held_out
    return replace(cfg, dev_size=dev_size, test_size=test_size)


def make_sampler(data: PreparedData, cfg: TrainConfig, rank: int, world: int) -> TokenBudgetSampler:
    """Each epoch's training batches, as lists of indices into ``data.train_ids``, each within
    ``--max-tokens`` (``<bos>``/``<eos>`` counted) and ``--max-sentences``: a pure function
    of the seed and the epoch, so a resumed run finds its place in the epoch; under
    ``torchrun``, this rank's share."""
    return TokenBudgetSampler(
        [(len(s) + 1, len(t) + 1) for s, t in data.train_ids],
        max_tokens=cfg.max_tokens,
        max_sentences=cfg.max_sentences,
        seed=cfg.seed,
        num_replicas=world,
        rank=rank,
    )


def log_notes(cfg: TrainConfig, data: PreparedData, log: Callable[[str], object]) -> None:
    """Log the run's notes (``data.notes``, which ``info.json`` keeps), with a ``--bf16``
    warning added last when this CPU would emulate bf16. Called once the model is built and
    started: a GloVe coverage and a warm start's carry-over are notes too."""
    if cfg.bf16 and (bf16_note := bf16_warning()) is not None:
        data.notes.append(f"--bf16: {bf16_note}")
    for note in data.notes:
        log(note)


def attribution(cfg: TrainConfig, init: dict[str, Any] | None) -> str | None:
    """Whom the run credits (``info.json``): ``--attribution`` or what its corpora say, then
    the credit of the model ``init`` says a warm start began from (its data is still in the
    weights), as :func:`~attenzione.data.attribution.run_attribution` joins them."""
    corpora = [cfg.data, *(CorpusSpec.parse(c).path for c in cfg.extra_data)]
    return run_attribution(corpora, cfg.attribution, (init or {}).get("attribution"))
