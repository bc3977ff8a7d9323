"""Setting a run's model up: its shape, the start points checked before the data work, the
network built and started (cold, warm or resumed), its optimizer and the DDP wrapper.

Kept apart from the run's settings and data (:mod:`attenzione.training.setup`) because all of
it answers one question, asked once per invocation: which weights does the first step update,
and with which optimizer state. The loop (:mod:`attenzione.training.trainer`) only uses what
these functions return.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from attenzione.config import ModelConfig, TrainConfig
from attenzione.model.transformer import Transformer
from attenzione.training import report
from attenzione.training.data_prep import PreparedData
from attenzione.training.presets import Preset
from attenzione.training.run_state import MetricsLog, Progress, restore_rng
from attenzione.training.warm_start import check_init_dir, warm_start
from attenzione.translator import model_dir


def own_shape(cfg: TrainConfig) -> dict[str, int]:
    """The sizes the run sets itself (``--enc-layers``/``--dec-layers``/``--d-ff``), by their
    ModelConfig names; a warm start may grow the model to these."""
    sizes = {"n_enc_layers": cfg.enc_layers, "n_dec_layers": cfg.dec_layers, "d_ff": cfg.d_ff}
    return {name: size for name, size in sizes.items() if size is not None}


def set_shape(cfg: TrainConfig) -> dict[str, int]:
    """The widths the run sets itself (``--d-model``/``--heads``/``--d-head``), by their
    ModelConfig names; a warm start never changes these: the model it starts from must have them."""
    sizes = {"d_model": cfg.d_model, "n_heads": cfg.heads, "d_head": cfg.d_head}
    return {name: size for name, size in sizes.items() if size is not None}


def model_shape(cfg: TrainConfig, preset: Preset) -> dict[str, Any]:
    """The preset's ModelConfig fields with the run's own sizes, when it sets them."""
    return {**preset.model, **set_shape(cfg), **own_shape(cfg)}


def check_start_points(cfg: TrainConfig, preset: Preset, *, resumed: bool) -> None:
    """Fail on an unusable ``--init-from`` (a wrong path or shape) or ``--tokenizers-from``
    now, not after the data work, which may take minutes. A resumed run has its own weights
    and tokenizers: it reads neither."""
    if resumed:
        return
    if cfg.init_from:
        shape = model_shape(cfg, preset)
        if preset.tokenizer == "glove-word" and cfg.d_model is None:
            shape["d_model"] = None  # the GloVe file's width: checked once the model is built
        check_init_dir(str(cfg.init_from), shape, set(own_shape(cfg)))
    if cfg.tokenizers_from:
        model_dir.load_tokenizers(cfg.tokenizers_from)


def build_model(cfg: TrainConfig, preset: Preset, data: PreparedData) -> Transformer:
    """The preset's model for these tokenizers; GloVe-initialised source for ``glove50``:
    d_model is the GloVe file's width, or, when the run sets another, the vectors enter through
    a learned projection to it.

    The special-token ids come from the tokenizers, so the model and its tokenizers always
    agree on what ``<pad>``, ``<bos>``, ``<eos>`` and ``<unk>`` are.
    """
    kwargs = model_shape(cfg, preset)
    glove = None
    if preset.tokenizer == "glove-word":
        from attenzione.data import embedding_matrix, load_glove

        glove = load_glove(cfg.glove)
        if cfg.d_model is None:
            kwargs["d_model"] = glove.dim  # the GloVe design: d_model is the GloVe size
        elif cfg.d_model != glove.dim:
            kwargs["src_embed_dim"] = glove.dim  # projected from the GloVe size to d_model
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


def start_weights(
    model: Transformer,
    cfg: TrainConfig,
    data: PreparedData,
    run_dir: Path,
    *,
    rank: int,
    resumed: bool,
) -> dict[str, Any] | None:
    """What the run started from (``RUN/init.json``; None for a cold start), after starting
    ``model`` from ``--init-from`` when a new run asks for it.

    A new run's rank 0 warm-starts the model (noting what was carried over in ``data.notes``)
    and writes ``init.json``, or removes a stale one on a cold start; under ``torchrun`` the
    DDP wrapper then gives its weights to the other ranks. A resumed run reads back what it
    wrote, so ``info.json`` keeps the record.
    """
    if not resumed and rank == 0:
        init = None  # a cold start
        if cfg.init_from:
            init = warm_start(
                model, data.src_tok, data.tgt_tok, str(cfg.init_from), set(own_shape(cfg))
            )
            data.notes.append(f"initialised from {init['model']}: {init['carried_over']}")
        report.save_init(run_dir, init)
    return report.load_init(run_dir)


def trainable(model: nn.Module) -> list[nn.Parameter]:
    """The parameters the optimizer updates and the step clips (a frozen embedding is not)."""
    return [p for p in model.parameters() if p.requires_grad]


def make_optimizer(params: list[nn.Parameter], cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW over ``params`` with the Transformer paper's betas and eps; the learning rate
    given here is replaced at every step by the schedule's."""
    return torch.optim.AdamW(
        params, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=cfg.weight_decay
    )


def restore(
    ckpt: Path | None,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    *,
    metrics: MetricsLog,
    rank: int,
    log: Callable[[str], object],
) -> Progress:
    """The progress the run continues from: a new run's (``ckpt`` None) or checkpoint
    ``ckpt``'s, whose weights, optimizer moments and random generators are put back too.

    Rank 0 drops the metrics records logged after the checkpoint (by a run killed before it
    saved them), so each step is logged once.
    """
    if ckpt is None:
        return Progress()
    changed = model_dir.read_upgrade(ckpt).changes
    if changed:  # the weights convert exactly, the optimizer's moments are in the old order
        raise ValueError(
            f"{ckpt} was saved by an older attenzione and loads only converted ({changed[0]}): "
            f"its optimizer moments cannot follow; start a new run from it with --init-from {ckpt}"
        )
    loaded = model_dir.load_model(ckpt)
    model.load_state_dict(loaded.state_dict())
    state = model_dir.load_state(ckpt)
    try:
        optimizer.load_state_dict(state["optimizer"])
    except ValueError:  # parameter groups of another size: a run of an older attenzione
        raise ValueError(
            f"{ckpt}'s optimizer state is for other parameters (a run saved before W^Q, W^K, "
            f"W^V were split): its weights load, its moments do not; start a new run from it "
            f"with --init-from {ckpt}"
        ) from None
    progress = Progress.from_state(state["progress"])
    restore_rng(state, device)
    if rank == 0:
        dropped = metrics.truncate_after(progress.step)
        if dropped:
            log(f"dropped {dropped} metrics records logged after the checkpoint")
    log(f"resumed {ckpt} at step {progress.step} (epoch {progress.epoch})")
    return progress


def wrap_ddp(model: nn.Module, world: int, device: torch.device) -> nn.Module:
    """What the step runs: ``model`` itself in one process; under ``torchrun``, DDP around
    it, which gives rank 0's weights to the other ranks and averages gradients over them."""
    if world <= 1:
        return model
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)
