"""The training loop: one process, or one of several under ``torchrun`` (DDP).

Each optimizer step is :func:`~attenzione.training.step.train_step`. Every ``eval_every``
steps rank 0 measures dev loss and dev BLEU (greedy) and writes ``best/`` when BLEU improves;
``last/`` is written at every evaluation, every ``save_every_minutes`` and at the end,
atomically (:mod:`attenzione.translator.model_dir`); with ``keep_snapshots`` K, the weights of
each of those saves are kept too, the last K of them, for checkpoint averaging
(:mod:`attenzione.training.averaging`). What the run reports (``info.json``, the evaluation
lines, ``curves.png``) is :mod:`attenzione.training.report`'s.

Resuming restores the model, the optimizer moments, the step, the RNG states and the position
in the epoch's batch order (batches are a pure function of seed and epoch), so an interrupted
and resumed run performs the same updates as an uninterrupted one. What may change on resume
is the budget (steps, epochs, minutes), the threads, the device and the attribution; the rest
is the run's, and a different value asked for is reported as ignored, not silently dropped.

Distributed runs are symmetric: every decision that leads into a collective operation (stop,
evaluate, early-stop) is taken from state all ranks share or broadcast from rank 0, so no rank
ever waits alone in a collective the others skipped. Model, batches and the decoding cache
live on ``--device`` (CPU, or the local rank's GPU with NCCL).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from attenzione.config import TrainConfig
from attenzione.data import collate
from attenzione.data.mixing import split_tag
from attenzione.model.fast.attention import for_training
from attenzione.threads import apply_threads
from attenzione.training import report
from attenzione.training.dev_eval import evaluate
from attenzione.training.model_setup import (
    build_model,
    check_start_points,
    make_optimizer,
    restore,
    start_weights,
    trainable,
    wrap_ddp,
)
from attenzione.training.presets import get_preset
from attenzione.training.run_state import MetricsLog, training_state
from attenzione.training.schedule import cooldown_factor, inverse_sqrt_lr
from attenzione.training.setup import (
    attribution,
    check_cooldown,
    continued_config,
    dist_info,
    find_resume,
    graceful_signals,
    log_notes,
    make_sampler,
    prepare_data,
    process_group,
    run_directory,
    scaled_sizes,
    seed_generators,
    with_held_out,
)
from attenzione.training.step import MetricsWindow, resolve_device, train_step
from attenzione.translator import model_dir

LOG_EVERY = 50  # steps between train-loss records


class Trainer:
    """Runs (or resumes) the training described by a :class:`TrainConfig`.

    Constructing one sets the run up, one call per step in ``__init__`` (the steps are
    :mod:`~attenzione.training.setup`'s and :mod:`~attenzione.training.model_setup`'s): what
    can be checked without the data is checked first, then the generators are seeded, the
    data prepared, the model built and started, its optimizer made (or restored) and, under
    ``torchrun``, the model wrapped in DDP. :meth:`train` is the loop.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        resume: bool = False,
        log: Callable[[str], object] = print,
        explicit: set[str] | None = None,
    ) -> None:
        self.signalled = ""  # the name of a stop signal received during train()
        self.budget_used = 0.0  # the part of the budget spent (0…1), for the cool-down
        self.rank, self.world = dist_info()
        self.log = log if self.rank == 0 else (lambda *a, **k: None)
        self.run_dir = run_directory(cfg.out)
        self.metrics = MetricsLog(self.run_dir)
        self.resume_from = find_resume(self.run_dir, resume)
        self.cfg = cfg = continued_config(cfg, self.resume_from, explicit, self.log)
        resumed = self.resume_from is not None
        # what can fail fails now, before the data work, which may take minutes
        check_cooldown(cfg, self.log)
        self.device = resolve_device(cfg.device)
        # None: what the machine can spare (attenzione.threads), not one thread per core
        apply_threads(cfg.num_threads)
        self.preset = get_preset(cfg.preset)
        check_start_points(cfg, self.preset, resumed=resumed)
        seed_generators(cfg.seed)
        # held-out sizes the user did not give follow the corpus (a small one still trains)
        scaled = frozenset() if resumed else scaled_sizes(cfg, explicit)
        self.data = prepare_data(cfg, self.preset, self.run_dir, self.rank, self.world, scaled)
        self.cfg = cfg = with_held_out(cfg, self.data)  # the run's config says what was held out
        self.model = build_model(cfg, self.preset, self.data)
        # what the run started from, for info.json (kept in the run, so --resume has it too)
        self.init = start_weights(
            self.model, cfg, self.data, self.run_dir, rank=self.rank, resumed=resumed
        )
        # the fused attention kernel and the fast dropout, once every layer is in place (a
        # warm start may add layers): modules replaced, the same parameters (model/fast/)
        for_training(self.model)
        self.model.to(self.device)
        log_notes(cfg, self.data, self.log)
        self.attribution = attribution(cfg, self.init)
        self.params = trainable(self.model)
        self.optimizer = make_optimizer(self.params, cfg)
        # step 0, or where the checkpoint left off (weights, optimizer moments, RNG states)
        self.progress = restore(
            self.resume_from,
            self.model,
            self.optimizer,
            self.device,
            metrics=self.metrics,
            rank=self.rank,
            log=self.log,
        )
        self.ddp = wrap_ddp(self.model, self.world, self.device)
        self.sampler = make_sampler(self.data, cfg, self.rank, self.world)

    # ------------------------------------------------------------------ saving
    def save(self, name: str, *, with_state: bool) -> None:
        """Write ``best/`` or ``last/`` (rank 0 only); train_config.json is inside the swap."""
        if self.rank != 0:
            return
        if name == "last" and self.cfg.keep_snapshots:
            model_dir.save_snapshot(
                self.run_dir, self.model, self.progress.step, self.cfg.keep_snapshots
            )
        model_dir.write_model_dir(
            self.run_dir / name,
            self.model,
            self.data.src_tok,
            self.data.tgt_tok,
            info=report.run_info(
                self.cfg,
                self.data,
                self.model,
                self.progress,
                init=self.init,
                attribution=self.attribution,
            ),
            state=training_state(self.progress, self.optimizer, self.device)
            if with_state
            else None,
            extra_files={model_dir.TRAIN_CONFIG_NAME: self.cfg.to_json() + "\n"},
            words=self.data.target_words,
            translated=self.data.translated_words,
        )

    def _metric(self, record: dict[str, Any]) -> None:
        if self.rank == 0:
            self.metrics.append(
                {"step": self.progress.step, "epoch": self.progress.epoch, **record}
            )

    # ------------------------------------------------------------------ evaluation
    def _broadcast(self, values: list[float]) -> list[float]:
        """Rank 0's ``values`` on every rank (identity in a single process)."""
        if self.world == 1:
            return values
        shared = torch.tensor(values, dtype=torch.float64, device=self.device)
        dist.broadcast(shared, src=0)
        return [float(v) for v in shared.tolist()]

    def _eval_and_save(self) -> None:
        """Every rank calls this at the same steps; rank 0 evaluates and writes."""
        p = self.progress
        p.last_eval_step = p.step  # on every rank: the end-of-run decision depends on it
        if self.rank == 0:
            record = {"step": p.step, "epoch": p.epoch, **evaluate(self.model, self.data, self.cfg)}
            p.history.append(record)
            self._metric(record)
            self.log(report.evaluation_line(record, self.data.extra_dev, p.train_seconds))
            score = record.get("dev_score", record["dev_bleu"])
            if score > p.best_bleu:
                p.best_bleu = score
                p.evals_without_gain = 0
                self.save("best", with_state=False)
            else:
                p.evals_without_gain += 1
            self.save("last", with_state=True)
        p.evals_without_gain = int(self._broadcast([p.evals_without_gain])[0])

    # ------------------------------------------------------------------ the loop
    def _stop_reason(self, started: float) -> str | None:
        cfg, p = self.cfg, self.progress
        if cfg.max_steps is not None and p.step >= cfg.max_steps:
            return f"reached max_steps={cfg.max_steps}"
        if cfg.epochs is not None and p.epoch >= cfg.epochs:
            return f"reached epochs={cfg.epochs}"
        minutes = (time.monotonic() - started) / 60
        time_used = minutes / cfg.max_minutes if cfg.max_minutes is not None else 0.0
        # Clocks (and signals) differ between ranks: rank 0 decides, or the others would wait
        # forever in the next all-reduce (and would cool the learning rate down differently).
        shared = self._broadcast([2 if self.signalled else int(time_used >= 1), time_used])
        code, time_used = int(shared[0]), shared[1]
        steps_used = p.step / cfg.max_steps if cfg.max_steps is not None else 0.0
        self.budget_used = max(time_used, steps_used)  # what the cool-down counts
        if code == 2:
            return f"interrupted by {self.signalled or 'rank 0'}"
        if code == 1:
            return f"reached max_minutes={cfg.max_minutes}"
        return None

    def train(self) -> dict[str, Any]:
        """Train until a stop condition; returns a summary (also the last history record)."""
        cfg = self.cfg
        if cfg.max_steps is None and cfg.epochs is None and cfg.max_minutes is None:
            raise ValueError("give a stop condition: --epochs, --max-steps or --max-minutes")
        with graceful_signals(self._on_signal):
            reason = self._loop()
        p = self.progress
        if reason.startswith("interrupted"):  # a signal asks for a quick exit: evaluate later
            self.save("last", with_state=True)
        elif p.last_eval_step != p.step:  # the same on every rank: the collective is symmetric
            self._eval_and_save()
        self.log(f"stopped: {reason}")
        if self.rank == 0:
            report.draw_curves(self.metrics.path, self.run_dir, self.log)
        return {"reason": reason, **(p.history[-1] if p.history else {})}

    def _loop(self) -> str:
        """Steps until a stop condition; returns its reason."""
        from tqdm import tqdm

        cfg, p = self.cfg, self.progress
        started = last_save = time.monotonic()
        self.model.train()
        bar = tqdm(
            total=cfg.max_steps,
            initial=p.step,
            # a bar redrawn into a log file is noise: the evaluation lines report progress there
            disable=not cfg.progress or self.rank != 0 or not _terminal(sys.stderr),
            unit="step",
            dynamic_ncols=True,
        )
        window = MetricsWindow(self.world)
        mc = self.model.config
        reason = self._stop_reason(started)
        while reason is None:
            self.sampler.set_epoch(p.epoch)
            batches = list(self.sampler)
            while p.batch_in_epoch < len(batches) and reason is None:
                idx = batches[p.batch_in_epoch]
                batch = collate(
                    self._pairs(idx, p.epoch, p.batch_in_epoch),
                    pad_id=mc.pad_id,
                    bos_id=mc.start_id,
                    eos_id=mc.eos_id,
                    indices=list(idx),
                ).to(self.device)
                lr = inverse_sqrt_lr(p.step + 1, peak=cfg.lr, warmup=cfg.warmup_steps)
                lr *= cooldown_factor(self.budget_used, cfg.cooldown)
                t0 = time.monotonic()
                result = train_step(
                    self.ddp,
                    batch,
                    self.optimizer,
                    lr=lr,
                    pad_id=mc.pad_id,
                    smoothing=cfg.label_smoothing,
                    clip_norm=cfg.clip_norm,
                    bf16=cfg.bf16,
                    params=self.params,
                )
                p.train_seconds += time.monotonic() - t0
                p.step += 1
                p.batch_in_epoch += 1
                window.add(result)
                bar.update(1)
                if p.step % LOG_EVERY == 0 or p.step == 1:
                    stats = window.report()
                    bar.set_postfix(
                        loss=f"{stats['train_loss']:.3f}",
                        lr=f"{lr:.2e}",
                        tok_s=f"{stats['tok_per_s']:,.0f}",
                        ep=p.epoch,
                    )
                    self._metric({**stats, "lr": lr})
                if p.step % cfg.eval_every == 0:
                    self._eval_and_save()
                    if cfg.patience and p.evals_without_gain >= cfg.patience:
                        reason = f"early stopping: no dev BLEU gain in {cfg.patience} evaluations"
                        break
                elif time.monotonic() - last_save >= 60 * cfg.save_every_minutes:
                    self.save("last", with_state=True)
                    last_save = time.monotonic()
                reason = reason or self._stop_reason(started)
            if p.batch_in_epoch >= len(batches):
                p.epoch += 1
                p.batch_in_epoch = 0
                reason = reason or self._stop_reason(started)
        bar.close()
        return reason

    def _pairs(
        self, idx: Sequence[int], epoch: int, batch: int
    ) -> list[tuple[list[int], list[int]]]:
        """The id pairs of one batch. With subword sampling the sources are segmented afresh,
        seeded by (seed, epoch, batch): a resumed run draws what an uninterrupted one would
        have. A draw longer than the run reads keeps the best segmentation."""
        pairs = [self.data.train_ids[i] for i in idx]
        alpha = self.cfg.subword_sampling
        if not alpha:
            return pairs
        seed = (self.cfg.seed * 1_000_003 + epoch) * 1_000_003 + batch
        texts = [split_tag(self.data.train_src[i]) for i in idx]
        drawn = self.data.src_tok.sample_batch([t for _, t in texts], alpha=alpha, seed=seed)
        # a tagged source keeps its tag's token first (the tag is not a piece to sample)
        drawn = [
            ids if tag is None else [pair[0][0], *ids]
            for ids, pair, (tag, _) in zip(drawn, pairs, texts, strict=True)
        ]
        limit = self.cfg.max_src_tokens
        return [
            (s if len(s) < limit else src, tgt) for s, (src, tgt) in zip(drawn, pairs, strict=True)
        ]

    def _on_signal(self, name: str) -> None:
        self.signalled = name


def train(
    cfg: TrainConfig,
    *,
    resume: bool = False,
    log: Callable[[str], object] = print,
    explicit: set[str] | None = None,
) -> dict[str, Any]:
    """Train (or resume) from Python; under ``torchrun`` the process group is set up here.

    ``explicit``: the TrainConfig fields the user set (for ``--resume``'s report of ignored
    settings); None treats them all as set.
    """
    with process_group(cfg.device):
        return Trainer(cfg, resume=resume, log=log, explicit=explicit).train()


def _terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (where a progress bar can redraw itself)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
