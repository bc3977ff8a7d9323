"""What a run directory keeps between invocations: progress, checkpoints and the metrics log.

A run directory (``--out``) holds ``data/`` and the tokenizers (written once by
:mod:`attenzione.training.data_prep`), ``last/`` and ``best/`` (model directories written by
:func:`attenzione.translator.model_dir.write_model_dir`; ``last/`` also carries
``training_state.pt`` and
``train_config.json``, inside the same atomic swap), and ``metrics.jsonl``.

Resuming must perform exactly the updates an uninterrupted run would, and must not repeat
what the interrupted run already logged: records written after the checkpoint a run resumes
from (a kill after an evaluation was logged but before ``last/`` was saved) are dropped from
``metrics.jsonl`` when resuming, so each step is logged once.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from attenzione import atomic

METRICS_NAME = "metrics.jsonl"


@dataclass
class Progress:
    """What must survive an interruption besides the weights and the optimizer.

    ``last_eval_step`` is kept on every rank (``history`` only on rank 0, the one that
    evaluates), so decisions that involve a collective are taken identically everywhere.
    """

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_bleu: float = -1.0
    evals_without_gain: int = 0
    train_seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    last_eval_step: int = -1

    def to_state(self) -> dict[str, Any]:
        """Plain data for ``training_state.pt`` (the history as JSON text: weights_only-safe)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["history"] = json.dumps(self.history)
        return out

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Progress:
        """Read what :meth:`to_state` (or an earlier version of it) wrote."""
        known = {f.name for f in fields(cls)}
        prog = cls(**{k: v for k, v in state.items() if k in known and k != "history"})
        prog.history = json.loads(state.get("history", "[]"))
        if "last_eval_step" not in state:  # written before the field existed
            evals = [int(h["step"]) for h in prog.history if "dev_bleu" in h]
            prog.last_eval_step = max(evals, default=-1)
        return prog


def training_state(
    progress: Progress, optimizer: torch.optim.Optimizer, device: torch.device
) -> dict[str, Any]:
    """Everything ``--resume`` restores besides the weights (tensors and plain data only)."""
    state: dict[str, Any] = {
        "optimizer": optimizer.state_dict(),
        "progress": progress.to_state(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
    }
    if device.type == "cuda":
        state["cuda_rng"] = torch.cuda.get_rng_state(device)
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    """Put the random generators back where the checkpoint left them."""
    torch.set_rng_state(state["torch_rng"])
    random.setstate(_to_tuple(state["python_rng"]))
    if device.type == "cuda" and "cuda_rng" in state:
        torch.cuda.set_rng_state(state["cuda_rng"], device)


def _to_tuple(x: Any) -> Any:
    """``random.setstate`` wants nested tuples; torch.load may hand back lists."""
    return tuple(_to_tuple(v) for v in x) if isinstance(x, list | tuple) else x


class MetricsLog:
    """``metrics.jsonl``: one JSON record per line, appended as training goes."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / METRICS_NAME

    def append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def truncate_after(self, step: int) -> int:
        """Drop records of steps after ``step`` (logged by a run killed before it saved them);
        returns how many were dropped. The file is rewritten atomically."""
        if not self.path.is_file():
            return 0
        kept, dropped = [], 0
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                record_step = int(json.loads(line).get("step", 0))
            except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
                dropped += 1  # a line cut short by the kill
                continue
            if record_step > step:
                dropped += 1
            else:
                kept.append(line + "\n")
        if dropped:
            atomic.write_text(self.path, "".join(kept))
        return dropped
