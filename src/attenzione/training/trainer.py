"""The training loop: one process, or one of several under ``torchrun`` (DDP).

Each optimizer step is :func:`~attenzione.training.step.train_step`. Every ``eval_every``
steps rank 0 measures dev loss and dev BLEU (greedy) and writes ``best/`` when BLEU improves;
``last/`` is written at every evaluation, every ``save_every_minutes`` and at the end,
atomically (:mod:`attenzione.translator.model_dir`); with ``keep_snapshots`` K, the weights of each
of
those saves are kept too, the last K of them, for checkpoint averaging
(:mod:`attenzione.training.averaging`).

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

import json
import os
import random
import shutil
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from attenzione import atomic
from attenzione.config import TrainConfig
from attenzione.data import TokenBudgetSampler, collate
from attenzione.data.attribution import run_attribution
from attenzione.data.mixing import CorpusSpec, split_tag
from attenzione.model.fast.precision import bf16_warning
from attenzione.search.lexicon import translated_words, word_list
from attenzione.training.data_prep import PreparedData, prepare
from attenzione.training.dev_eval import dev_loss, dev_scores
from attenzione.training.presets import get_preset
from attenzione.training.run_state import MetricsLog, Progress, restore_rng, training_state
from attenzione.training.schedule import inverse_sqrt_lr
from attenzione.training.setup import (
    build_model,
    dist_info,
    graceful_signals,
    model_shape,
    own_shape,
    resumed_config,
)
from attenzione.training.step import (
    MetricsWindow,
    process_group_backend,
    resolve_device,
    train_step,
)
from attenzione.training.warm_start import check_init_dir, warm_start
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator

LOG_EVERY = 50  # steps between train-loss records
INIT_NAME = "init.json"  # in the run directory: what a warm-started run started from


class Trainer:
    """Runs (or resumes) the training described by a :class:`TrainConfig`."""

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        resume: bool = False,
        log: Callable[[str], object] = print,
        explicit: set[str] | None = None,
    ) -> None:
        self.signalled = ""  # the name of a stop signal received during train()
        self.rank, self.world = dist_info()
        self.log = log if self.rank == 0 else (lambda *a, **k: None)
        self.run_dir = Path(cfg.out)
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise NotADirectoryError(f"--out {self.run_dir} is a file, not a run directory")
        self.metrics = MetricsLog(self.run_dir)
        self.resume_from = self._find_resume(resume)
        if self.resume_from is not None:
            saved = TrainConfig.load(self.resume_from / model_dir.TRAIN_CONFIG_NAME)
            cfg, ignored = resumed_config(cfg, saved, explicit)
            if ignored:
                self.log("--resume keeps the run's settings: " + ", ".join(ignored))
        self.cfg = cfg
        self.device = resolve_device(cfg.device)
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        self.preset = get_preset(cfg.preset)
        warm = bool(cfg.init_from) and self.resume_from is None  # a resumed run has its weights
        self.grow = set(own_shape(cfg))  # a warm start may grow the model to these
        if warm:  # a wrong path or shape fails now, not after the data work
            shape = model_shape(cfg, self.preset)
            if self.preset.tokenizer == "glove-word":
                shape["d_model"] = None  # the GloVe file's width: checked once the model is built
            check_init_dir(str(cfg.init_from), shape, self.grow)
        if cfg.tokenizers_from and self.resume_from is None:
            model_dir.load_tokenizers(cfg.tokenizers_from)  # fails now, not after the data work
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        self.data = self._prepare_data()
        self.model = build_model(cfg, self.preset, self.data)
        init_path = self.run_dir / INIT_NAME
        # under torchrun rank 0 alone loads the start model: DDP gives its weights to the rest
        if warm and self.rank == 0:
            init = warm_start(
                self.model, self.data.src_tok, self.data.tgt_tok, str(cfg.init_from), self.grow
            )
            atomic.write_text(init_path, json.dumps(init, indent=2) + "\n")
            self.data.notes.append(f"initialised from {init['model']}: {init['carried_over']}")
        elif self.resume_from is None and self.rank == 0:
            init_path.unlink(missing_ok=True)  # a cold start: a stale file is not this run's
        # what the run started from, for info.json (kept in the run, so --resume has it too)
        self.init: dict[str, Any] | None = (
            json.loads(init_path.read_text(encoding="utf-8")) if init_path.is_file() else None
        )
        self.model.to(self.device)
        if cfg.bf16 and (bf16_note := bf16_warning()) is not None:
            self.data.notes.append(f"--bf16: {bf16_note}")
        for note in self.data.notes:  # after the model: GloVe coverage is one of them
            self.log(note)
        corpora = [cfg.data, *(CorpusSpec.parse(c).path for c in cfg.extra_data)]
        inherited = (self.init or {}).get("attribution")
        self.attribution = run_attribution(corpora, cfg.attribution, inherited)
        self.progress = Progress()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=cfg.weight_decay
        )
        if self.resume_from is not None:
            self._restore(self.resume_from)
        self.ddp: nn.Module = self.model
        if self.world > 1:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.ddp = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.sampler = TokenBudgetSampler(
            [(len(s) + 1, len(t) + 1) for s, t in self.data.train_ids],
            max_tokens=cfg.max_tokens,
            max_sentences=cfg.max_sentences,
            seed=cfg.seed,
            num_replicas=self.world,
            rank=self.rank,
        )

    # ------------------------------------------------------------------ set-up
    def _find_resume(self, resume: bool) -> Path | None:
        found = model_dir.find_model_dir(self.run_dir / "last", resumable=True)
        if resume and found is None:
            raise FileNotFoundError(f"--resume: no checkpoint in {self.run_dir / 'last'}")
        if not resume and found is not None:
            raise ValueError(
                f"{self.run_dir} already holds a run; pass --resume to continue it or choose "
                "another --out"
            )
        return found if resume else None

    def _prepare_data(self) -> PreparedData:
        """Rank 0 writes the splits and tokenizers (first run); the others then read them."""
        data = None
        if self.rank == 0:
            created = None  # the first directory this call makes, if it makes any
            for folder in [self.run_dir, *self.run_dir.parents]:
                if folder.exists():
                    break
                created = folder
            self.run_dir.mkdir(parents=True, exist_ok=True)
            try:
                data = prepare(self.cfg, self.preset, self.run_dir, write=True)
            except BaseException:
                if created is not None:  # a run that never started leaves no directory behind
                    shutil.rmtree(created, ignore_errors=True)
                raise
        if self.world > 1:
            dist.barrier()
        if data is None:
            data = prepare(self.cfg, self.preset, self.run_dir, write=False)
        return data

    def _restore(self, ckpt: Path) -> None:
        loaded = model_dir.load_model(ckpt)
        self.model.load_state_dict(loaded.state_dict())
        state = model_dir.load_state(ckpt)
        self.optimizer.load_state_dict(state["optimizer"])
        self.progress = Progress.from_state(state["progress"])
        restore_rng(state, self.device)
        if self.rank == 0:
            dropped = self.metrics.truncate_after(self.progress.step)
            if dropped:
                self.log(f"dropped {dropped} metrics records logged after the checkpoint")
        self.log(f"resumed {ckpt} at step {self.progress.step} (epoch {self.progress.epoch})")

    # ------------------------------------------------------------------ saving
    def _info(self) -> dict[str, Any]:
        evals = [h for h in self.progress.history if "dev_bleu" in h]
        last_eval: dict[str, Any] = evals[-1] if evals else {}
        return {
            "preset": self.cfg.preset,
            # encoder + decoder layers: the preset's, or the run's own (--enc/--dec-layers)
            "layers": f"{self.model.config.n_enc_layers}+{self.model.config.n_dec_layers}",
            "step": self.progress.step,
            "epoch": self.progress.epoch,
            "train_hours": round(self.progress.train_seconds / 3600, 3),
            "dev_bleu_greedy": last_eval.get("dev_bleu"),
            "dev_chrf_greedy": last_eval.get("dev_chrf"),
            "parameters": self.model.num_parameters(),
            "max_src_tokens": self.cfg.max_src_tokens,
            "number_format": self.data.number_format,
            "source_language": self.cfg.src_lang,
            "target_language": self.cfg.tgt_lang,
            "data": str(self.cfg.data),
            "corpora": [self._first_corpus(), *self.cfg.extra_data],
            # corpus tags the model reads (attenzione.data.mixing); translation uses none
            # unless asked (--tag), or default_tag when a model sets one
            **({"tags": list(tags), "default_tag": None} if (tags := self._tags()) else {}),
            **self._init_info(),
            **{f"dev_{n}_bleu_greedy": last_eval.get(f"dev_{n}_bleu") for n in self.data.extra_dev},
            "notes": list(self.data.notes),
            "attribution": self.attribution,
        }

    def _tags(self) -> tuple[str, ...]:
        return tuple(getattr(self.data.src_tok, "tags", ()))

    def _first_corpus(self) -> str:
        """The first corpus as ``--data`` named it: PATH, or PATH:WEIGHT when weighted."""
        weight = self.cfg.data_weight
        return str(self.cfg.data) if weight == 1 else f"{self.cfg.data}:{weight:g}"

    def _init_info(self) -> dict[str, Any]:
        """What a warm-started run started from, and its hours counting that model's."""
        if self.init is None:
            return {}
        hours = self.progress.train_seconds / 3600 + (self.init.get("train_hours") or 0.0)
        return {"initialised_from": self.init, "train_hours_with_init": round(hours, 3)}

    @cached_property
    def target_words(self) -> list[str]:
        """The words of the training targets: the model directory's known words (the word
        check of beam search, :mod:`attenzione.search.lexicon`)."""
        return word_list(tgt for _, tgt in self.data.train)

    @cached_property
    def translated_words(self) -> list[str]:
        """The source words the training pairs always translate: not free for beam
        search's word check to copy (:func:`attenzione.search.lexicon.translated_words`)."""
        return translated_words([(split_tag(s)[1], t) for s, t in self.data.train])

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
            info=self._info(),
            state=training_state(self.progress, self.optimizer, self.device)
            if with_state
            else None,
            extra_files={model_dir.TRAIN_CONFIG_NAME: self.cfg.to_json() + "\n"},
            words=self.target_words,
            translated=self.translated_words,
        )

    def _metric(self, record: dict[str, Any]) -> None:
        if self.rank == 0:
            self.metrics.append(
                {"step": self.progress.step, "epoch": self.progress.epoch, **record}
            )

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, Any]:
        """Dev loss/perplexity on the dev split and greedy BLEU/chrF on the dev sets' heads."""
        self.model.eval()
        try:
            record: dict[str, Any] = dev_loss(
                self.model,
                self.data.dev,
                self.data.src_tok,
                self.data.tgt_tok,
                limit=self.cfg.max_src_tokens,
                smoothing=self.cfg.label_smoothing,
                bf16=self.cfg.bf16,
            )
            translator = Translator(
                self.model,
                self.data.src_tok,
                self.data.tgt_tok,
                max_src_tokens=self.cfg.max_src_tokens,
            )
            dev_sets = {"": self.data.dev, **self.data.extra_dev}
            record.update(dev_scores(translator, dev_sets, self.cfg.dev_bleu_sentences))
        finally:
            self.model.train()
        return record

    def _broadcast(self, value: int) -> int:
        """Rank 0's ``value`` on every rank (identity in a single process)."""
        if self.world == 1:
            return value
        flag = torch.tensor([value], dtype=torch.long, device=self.device)
        dist.broadcast(flag, src=0)
        return int(flag.item())

    def _eval_and_save(self) -> None:
        """Every rank calls this at the same steps; rank 0 evaluates and writes."""
        p = self.progress
        p.last_eval_step = p.step  # on every rank: the end-of-run decision depends on it
        if self.rank == 0:
            record = {"step": p.step, "epoch": p.epoch, **self.evaluate()}
            p.history.append(record)
            self._metric(record)
            extra = "".join(
                f"  {n}: BLEU {record[f'dev_{n}_bleu']:.2f} chrF {record[f'dev_{n}_chrf']:.2f}"
                for n in self.data.extra_dev
            )
            self.log(
                f"step {p.step}: dev loss {record['dev_loss']:.3f}  ppl {record['dev_ppl']:.2f}  "
                f"BLEU {record['dev_bleu']:.2f}  chrF {record['dev_chrf']:.2f}{extra}  "
                f"({p.train_seconds / 3600:.2f} train h)"
            )
            score = record.get("dev_score", record["dev_bleu"])
            if score > p.best_bleu:
                p.best_bleu = score
                p.evals_without_gain = 0
                self.save("best", with_state=False)
            else:
                p.evals_without_gain += 1
            self.save("last", with_state=True)
        p.evals_without_gain = self._broadcast(p.evals_without_gain)

    # ------------------------------------------------------------------ the loop
    def _stop_reason(self, started: float) -> str | None:
        cfg, p = self.cfg, self.progress
        if cfg.max_steps is not None and p.step >= cfg.max_steps:
            return f"reached max_steps={cfg.max_steps}"
        if cfg.epochs is not None and p.epoch >= cfg.epochs:
            return f"reached epochs={cfg.epochs}"
        time_up = cfg.max_minutes is not None and time.monotonic() - started >= 60 * cfg.max_minutes
        # Clocks (and signals) differ between ranks: rank 0 decides, or the others would wait
        # forever in the next all-reduce.
        code = self._broadcast(2 if self.signalled else int(time_up))
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
            self._plot()
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
            disable=not cfg.progress or self.rank != 0,
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
                    bos_id=mc.bos_id,
                    eos_id=mc.eos_id,
                    indices=list(idx),
                ).to(self.device)
                lr = inverse_sqrt_lr(p.step + 1, peak=cfg.lr, warmup=cfg.warmup_steps)
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

    def _plot(self) -> None:
        from attenzione.training.plots import plot_curves

        try:
            plot_curves(self.metrics.path, self.run_dir / "curves.png")
        except Exception as exc:  # a plot must never lose a finished run
            self.log(f"could not draw curves.png: {exc}")


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
    started_dist = False
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        device = resolve_device(cfg.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group(process_group_backend(device))
        started_dist = True
    try:
        return Trainer(cfg, resume=resume, log=log, explicit=explicit).train()
    finally:
        if started_dist:
            dist.destroy_process_group()
