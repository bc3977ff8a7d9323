"""One optimizer step, the window of steps the log reports on, and where training runs.

:func:`train_step` is the whole of "learning" for one batch — everything else in the trainer
is bookkeeping (when to evaluate, save, stop):

    batch → teacher-forced forward (logits only at real target positions, optionally under
    bf16 autocast) → label-smoothed loss averaged over this batch's target tokens → backward
    → gradient clipping → AdamW at the schedule's learning rate

:class:`MetricsWindow` averages the loss and measures tokens per second over the steps since
the last report. :func:`resolve_device` and :func:`process_group_backend` decide where the
run lives: ``--device auto`` takes a GPU when there is one (the local rank's, under
``torchrun``), and the process group uses NCCL only when the tensors really are on a GPU.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from attenzione.data.batching import Batch
from attenzione.training.loss import label_smoothed_loss

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(name: str) -> torch.device:
    """``auto`` → the local rank's GPU if CUDA is available, else the CPU; ``cuda`` without a
    GPU is an error that says so."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {name!r}")
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for, but torch sees no CUDA GPU here")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    return torch.device("cuda", local_rank % torch.cuda.device_count())


def process_group_backend(device: torch.device) -> str:
    """NCCL for GPU tensors, gloo for CPU ones (NCCL cannot move CPU tensors)."""
    return "nccl" if device.type == "cuda" else "gloo"


def autocast(device: torch.device, bf16: bool) -> AbstractContextManager[object]:
    """bf16 autocast on ``device`` when asked, else nothing."""
    if bf16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


@dataclass
class StepResult:
    """loss: this batch's mean smoothed loss per target token; tokens: its target tokens;
    grad_norm: the gradient's L2 norm before clipping; clipped: whether the clip scaled it."""

    loss: float
    tokens: int
    grad_norm: float = 0.0
    clipped: bool = False


def train_step(
    model: nn.Module,
    batch: Batch,
    optimizer: torch.optim.Optimizer,
    *,
    lr: float,
    pad_id: int,
    smoothing: float,
    clip_norm: float,
    bf16: bool,
    params: list[nn.Parameter],
) -> StepResult:
    """One optimizer step on ``batch`` (already on the model's device).

    ``model`` may be the DDP wrapper (gradients are then averaged over ranks during backward);
    ``params`` are the parameters to clip (the unwrapped model's).
    """
    for group in optimizer.param_groups:
        group["lr"] = lr
    device = batch.src_ids.device
    with autocast(device, bf16):
        real = batch.tgt_out != pad_id  # (B,T): the only positions that get logits
        logits = model(batch.src_ids, batch.tgt_in, logits_at=real).logits  # (N,V)
    loss_sum, _, n_tok = label_smoothed_loss(
        logits, batch.tgt_out, pad_id=pad_id, smoothing=smoothing
    )
    # Average over this rank's tokens; DDP then averages over ranks.
    loss = loss_sum / max(n_tok, 1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    # the norm is measured every step, clipped or not: the log reports it
    if clip_norm > 0:
        norm = float(torch.nn.utils.clip_grad_norm_(params, clip_norm))
    else:
        grads = [p.grad for p in params if p.grad is not None]
        norm = float(torch.nn.utils.get_total_norm(grads)) if grads else 0.0
    optimizer.step()
    return StepResult(float(loss.detach()), n_tok, norm, clip_norm > 0 and norm > clip_norm)


class MetricsWindow:
    """Loss and throughput over the steps since the last report."""

    def __init__(self, world: int = 1) -> None:
        self.world = world
        self.reset()

    def reset(self) -> None:
        self.tokens, self.loss, self.steps = 0, 0.0, 0
        self.grad_norm, self.clipped = 0.0, 0
        self.started = time.monotonic()

    def add(self, result: StepResult) -> None:
        self.tokens += result.tokens
        self.loss += result.loss
        self.grad_norm += result.grad_norm
        self.clipped += int(result.clipped)
        self.steps += 1

    def report(self) -> dict[str, float]:
        """{train_loss, tok_per_s, grad_norm, clipped} of the window (tokens of every rank),
        then a new window: grad_norm is the mean norm before clipping, clipped the fraction of
        steps whose gradient the clip scaled down."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        steps = max(self.steps, 1)
        out = {
            "train_loss": self.loss / steps,
            "tok_per_s": self.tokens * self.world / elapsed,
            "grad_norm": self.grad_norm / steps,
            "clipped": self.clipped / steps,
        }
        self.reset()
        return out
