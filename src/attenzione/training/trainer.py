"""The training loop: one process, or one of several under ``torchrun`` (DDP, gloo on CPU).

Each optimizer step: a token-budget batch → teacher-forced forward (optionally under bf16
autocast) → label-smoothed loss averaged over the batch's target tokens → backward → gradient
clipping → AdamW with the inverse-square-root schedule. Every ``eval_every`` steps rank 0
measures dev loss and dev BLEU (greedy) and writes ``best/`` when BLEU improves; ``last/`` is
written at every evaluation, every ``save_every_minutes`` and at the end, atomically.

Resuming restores the model, the optimizer moments, the step, the RNG states and the position
in the epoch's batch order (batches are a pure function of seed and epoch), so an interrupted
and resumed run performs the same updates as an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from attenzione.config import DecodeConfig, ModelConfig, TrainConfig
from attenzione.data import TokenBudgetSampler, collate
from attenzione.evaluation import corpus_scores, number_fidelity
from attenzione.model import Transformer
from attenzione.speed import bf16_warning
from attenzione.training.checkpoint import find_checkpoint, load_state, write_checkpoint
from attenzione.training.data_prep import PreparedData, prepare
from attenzione.training.loss import label_smoothed_loss
from attenzione.training.presets import Preset, get_preset
from attenzione.training.schedule import inverse_sqrt_lr
from attenzione.translator import Translator

ATTRIBUTION = (
    "English–Italian sentence pairs from the Tatoeba Project (https://tatoeba.org), contributed "
    "by its members and licensed under CC-BY 2.0 FR; pair selection by ManyThings.org "
    "(https://www.manythings.org/anki/)."
)


@dataclass
class Progress:
    """What must survive an interruption besides the weights and the optimizer."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_bleu: float = -1.0
    evals_without_gain: int = 0
    train_seconds: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)


def _dist_info() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def build_model(cfg: TrainConfig, preset: Preset, data: PreparedData) -> Transformer:
    """The preset's model for these tokenizers; GloVe-initialised source for ``glove50``."""
    kwargs = dict(preset.model)
    glove = None
    if preset.tokenizer == "glove-word":
        from attenzione.data import embedding_matrix, load_glove

        glove = load_glove(cfg.glove)
        kwargs["d_model"] = glove.dim  # seed 000: d_model is the GloVe size
    mcfg = ModelConfig(
        src_vocab_size=data.src_tok.vocab_size, tgt_vocab_size=data.tgt_tok.vocab_size, **kwargs
    )
    model = Transformer(mcfg)
    if glove is not None:
        matrix, coverage = embedding_matrix(glove, data.src_tok, seed=cfg.seed)
        model.src_embed.load_pretrained(matrix, freeze=cfg.freeze_embeddings)
        data.notes.append(str(coverage))
    return model


class Trainer:
    """Runs (or resumes) the training described by a :class:`TrainConfig`."""

    def __init__(self, cfg: TrainConfig, *, resume: bool = False, log: Any = print) -> None:
        self.signalled = ""  # the name of a stop signal received during train()
        self.rank, self.world = _dist_info()
        self.log = log if self.rank == 0 else (lambda *a, **k: None)
        self.run_dir = Path(cfg.out)
        self.resume_from: Path | None = None
        if resume:
            self.resume_from = find_checkpoint(self.run_dir / "last")
            if self.resume_from is None:
                raise FileNotFoundError(f"--resume: no checkpoint in {self.run_dir / 'last'}")
            saved = TrainConfig.load(self.resume_from / "train_config.json")
            # The shape of the run comes from the checkpoint; only the budget may change.
            cfg = saved.__class__(
                **{
                    **saved.to_dict(),
                    "epochs": cfg.epochs,
                    "max_steps": cfg.max_steps,
                    "max_minutes": cfg.max_minutes,
                    "progress": cfg.progress,
                    "num_threads": cfg.num_threads,
                }
            )
        elif self.rank == 0 and find_checkpoint(self.run_dir / "last") is not None:
            raise ValueError(
                f"{self.run_dir} already holds a run; pass --resume to continue it or choose "
                "another --out"
            )
        self.cfg = cfg
        if cfg.num_threads:
            torch.set_num_threads(cfg.num_threads)
        self.preset = get_preset(cfg.preset)
        torch.manual_seed(cfg.seed)
        random.seed(cfg.seed)
        if self.rank == 0:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.rank == 0:
            self.data = prepare(cfg, self.preset, self.run_dir, write=True)
        if self.world > 1:
            dist.barrier()  # rank 0 has written the splits and tokenizers: the others read them
        if self.rank != 0:
            self.data = prepare(cfg, self.preset, self.run_dir, write=False)
        self.model = build_model(cfg, self.preset, self.data)
        if cfg.bf16 and (bf16_note := bf16_warning()) is not None:
            self.data.notes.append(f"--bf16: {bf16_note}")
        for note in self.data.notes:  # after the model: GloVe coverage is one of them
            self.log(note)
        self.progress = Progress()
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=cfg.weight_decay
        )
        if self.resume_from is not None:
            self._restore(self.resume_from)
        self.ddp: nn.Module = self.model
        if self.world > 1:
            self.ddp = nn.parallel.DistributedDataParallel(self.model)
        lengths = [(len(s) + 1, len(t) + 1) for s, t in self.data.train_ids]
        self.sampler = TokenBudgetSampler(
            lengths,
            max_tokens=cfg.max_tokens,
            max_sentences=cfg.max_sentences,
            seed=cfg.seed,
            num_replicas=self.world,
            rank=self.rank,
        )

    # ------------------------------------------------------------------ state
    def _restore(self, ckpt: Path) -> None:
        loaded = Transformer.load(ckpt)
        self.model.load_state_dict(loaded.state_dict())
        state = load_state(ckpt)
        self.optimizer.load_state_dict(state["optimizer"])
        prog = state["progress"]
        self.progress = Progress(**{**prog, "history": json.loads(prog["history"])})
        torch.set_rng_state(state["torch_rng"])
        random.setstate(_to_tuple(state["python_rng"]))
        self.log(f"resumed {ckpt} at step {self.progress.step} (epoch {self.progress.epoch})")

    def _state(self) -> dict[str, Any]:
        prog = dict(self.progress.__dict__)
        prog["history"] = json.dumps(prog["history"])
        return {
            "optimizer": self.optimizer.state_dict(),
            "progress": prog,
            "torch_rng": torch.get_rng_state(),
            "python_rng": random.getstate(),
        }

    def _info(self) -> dict[str, Any]:
        evals = [h for h in self.progress.history if "dev_bleu" in h]
        last_eval: dict[str, Any] = evals[-1] if evals else {}
        return {
            "preset": self.cfg.preset,
            "step": self.progress.step,
            "epoch": self.progress.epoch,
            "train_hours": round(self.progress.train_seconds / 3600, 3),
            "dev_bleu_greedy": last_eval.get("dev_bleu"),
            "dev_chrf_greedy": last_eval.get("dev_chrf"),
            "parameters": self.model.num_parameters(),
            "max_src_tokens": self.cfg.max_src_tokens,
            "data": str(self.cfg.data),
            "corpora": [str(self.cfg.data), *self.cfg.extra_data],
            **{f"dev_{n}_bleu_greedy": last_eval.get(f"dev_{n}_bleu") for n in self.data.extra_dev},
            "notes": list(self.data.notes),
            "attribution": ATTRIBUTION,
        }

    def save(self, name: str, *, with_state: bool) -> None:
        if self.rank != 0:
            return
        path = write_checkpoint(
            self.run_dir / name,
            self.model,
            self.data.src_tok,
            self.data.tgt_tok,
            info=self._info(),
            state=self._state() if with_state else None,
        )
        self.cfg.save(path / "train_config.json")

    def _metric(self, record: dict[str, Any]) -> None:
        if self.rank != 0:
            return
        record = {"step": self.progress.step, "epoch": self.progress.epoch, **record}
        with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Dev loss/perplexity on the whole dev split and greedy BLEU/chrF on its head."""
        self.model.eval()
        dev = self.data.dev
        src = [self.data.src_tok.encode(s)[: self.cfg.max_src_tokens] for s, _ in dev]
        tgt = [self.data.tgt_tok.encode(t)[: self.cfg.max_src_tokens] for _, t in dev]
        total, nll_sum, n_tok = 0.0, 0.0, 0
        for start in range(0, len(dev), 64):
            batch = collate(
                list(zip(src[start : start + 64], tgt[start : start + 64], strict=True))
            )
            with self._autocast():
                logits = self.model(batch.src_ids, batch.tgt_in).logits
            loss, nll, n = label_smoothed_loss(
                logits,
                batch.tgt_out,
                pad_id=self.model.config.pad_id,
                smoothing=self.cfg.label_smoothing,
            )
            total, nll_sum, n_tok = total + float(loss), nll_sum + float(nll), n_tok + n
        translator = Translator(
            self.model, self.data.src_tok, self.data.tgt_tok, max_src_tokens=self.cfg.max_src_tokens
        )
        record = {
            "dev_loss": total / max(n_tok, 1),
            "dev_ppl": math.exp(min(nll_sum / max(n_tok, 1), 50)),
        }
        # greedy BLEU/chrF on the head of each dev set: the run's own split ("dev_bleu") and
        # every --extra-dev set ("dev_<name>_bleu"), with the share of source numbers kept
        for name, pairs in [("", dev), *self.data.extra_dev.items()]:
            head = pairs[: self.cfg.dev_bleu_sentences]
            sources = [s for s, _ in head]
            # the model's own output: no number repair, so the figures show what it learned
            hyps = translator.translate(
                sources, decode=DecodeConfig(method="greedy"), fix_numbers=False
            )
            scores = corpus_scores(hyps, [t for _, t in head])
            prefix = f"dev_{name}_" if name else "dev_"
            record[prefix + "bleu"] = scores.bleu
            record[prefix + "chrf"] = scores.chrf
            kept = number_fidelity(sources, hyps)
            if kept.total:
                record[prefix + "numbers"] = kept.share
        if self.data.extra_dev:
            # the checkpoint kept as best/ is the best on all dev sets together
            names = ["dev_bleu", *(f"dev_{n}_bleu" for n in self.data.extra_dev)]
            record["dev_score"] = sum(record[n] for n in names) / len(names)
        self.model.train()
        return record

    def _autocast(self) -> Any:
        if self.cfg.bf16:
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return nullcontext()

    # ------------------------------------------------------------------ the loop
    def _stop_reason(self, started: float) -> str | None:
        cfg, p = self.cfg, self.progress
        if cfg.max_steps is not None and p.step >= cfg.max_steps:
            return f"reached max_steps={cfg.max_steps}"
        if cfg.epochs is not None and p.epoch >= cfg.epochs:
            return f"reached epochs={cfg.epochs}"
        time_up = cfg.max_minutes is not None and time.monotonic() - started >= 60 * cfg.max_minutes
        code = 2 if self.signalled else int(time_up)
        if self.world > 1:
            # Clocks (and signals) differ between ranks: rank 0 decides, or the others would
            # wait forever in the next all-reduce.
            flag = torch.tensor([code])
            dist.broadcast(flag, src=0)
            code = int(flag)
        if code == 2:
            return f"interrupted by {self.signalled or 'rank 0'}"
        if code == 1:
            return f"reached max_minutes={cfg.max_minutes}"
        return None

    @contextmanager
    def _graceful_signals(self) -> Iterator[None]:
        """SIGTERM / SIGINT finish the current step, save ``last/`` and stop (resumable)."""
        self.signalled = ""

        def handler(signum: int, _frame: Any) -> None:
            self.signalled = signal.Signals(signum).name

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

    def train(self) -> dict[str, Any]:
        """Train until a stop condition; returns a summary (also the last history record)."""
        with self._graceful_signals():
            return self._train()

    def _train(self) -> dict[str, Any]:
        from tqdm import tqdm

        cfg, p = self.cfg, self.progress
        if cfg.max_steps is None and cfg.epochs is None and cfg.max_minutes is None:
            raise ValueError("give a stop condition: --epochs, --max-steps or --max-minutes")
        started = time.monotonic()
        last_save = started
        self.model.train()
        bar = tqdm(
            total=cfg.max_steps,
            initial=p.step,
            disable=not cfg.progress or self.rank != 0,
            unit="step",
            dynamic_ncols=True,
        )
        window_tokens, window_start, window_loss, window_n = 0, time.monotonic(), 0.0, 0
        reason = self._stop_reason(started)
        pad = self.model.config.pad_id
        while reason is None:
            self.sampler.set_epoch(p.epoch)
            batches = list(self.sampler)
            while p.batch_in_epoch < len(batches) and reason is None:
                idx = batches[p.batch_in_epoch]
                batch = collate([self.data.train_ids[i] for i in idx], indices=list(idx))
                lr = inverse_sqrt_lr(p.step + 1, peak=cfg.lr, warmup=cfg.warmup_steps)
                for group in self.optimizer.param_groups:
                    group["lr"] = lr
                t0 = time.monotonic()
                with self._autocast():
                    real = batch.tgt_out != pad
                    logits = self.ddp(batch.src_ids, batch.tgt_in, logits_at=real).logits
                loss_sum, _, n_tok = label_smoothed_loss(
                    logits, batch.tgt_out, pad_id=pad, smoothing=cfg.label_smoothing
                )
                # Average over this rank's tokens; DDP then averages over ranks.
                loss = loss_sum / max(n_tok, 1)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm > 0:
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip_norm)
                self.optimizer.step()
                p.train_seconds += time.monotonic() - t0
                p.step += 1
                p.batch_in_epoch += 1
                window_tokens += n_tok
                window_loss += float(loss.detach())
                window_n += 1
                bar.update(1)
                if p.step % 50 == 0 or p.step == 1:
                    elapsed = max(time.monotonic() - window_start, 1e-9)
                    tps = window_tokens * self.world / elapsed
                    avg = window_loss / max(window_n, 1)
                    bar.set_postfix(
                        loss=f"{avg:.3f}", lr=f"{lr:.2e}", tok_s=f"{tps:,.0f}", ep=p.epoch
                    )
                    self._metric({"train_loss": avg, "lr": lr, "tok_per_s": tps})
                    window_tokens, window_start, window_loss, window_n = 0, time.monotonic(), 0.0, 0
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
        interrupted = reason is not None and reason.startswith("interrupted")
        if not interrupted and (not p.history or p.history[-1].get("step") != p.step):
            self._eval_and_save()
        else:  # a signal asks for a quick exit: save what we have, evaluate next time
            self.save("last", with_state=True)
        self.log(f"stopped: {reason}")
        if self.rank == 0:
            self._plot()
        return {"reason": reason, **(p.history[-1] if p.history else {})}

    def _eval_and_save(self) -> None:
        p = self.progress
        record: dict[str, Any] = {}
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
        if self.world > 1:
            flag = torch.tensor([p.evals_without_gain], dtype=torch.long)
            dist.broadcast(flag, src=0)
            p.evals_without_gain = int(flag)

    def _plot(self) -> None:
        from attenzione.training.plots import plot_curves

        try:
            plot_curves(self.run_dir / "metrics.jsonl", self.run_dir / "curves.png")
        except Exception as exc:  # a plot must never lose a finished run
            self.log(f"could not draw curves.png: {exc}")


def _to_tuple(x: Any) -> Any:
    """``random.setstate`` wants nested tuples; torch.load may hand back lists."""
    return tuple(_to_tuple(v) for v in x) if isinstance(x, list | tuple) else x


def train(cfg: TrainConfig, *, resume: bool = False, log: Any = print) -> dict[str, Any]:
    """Train (or resume) from Python; under ``torchrun`` the process group is set up here."""
    started_dist = False
    if (
        "WORLD_SIZE" in os.environ
        and int(os.environ["WORLD_SIZE"]) > 1
        and not dist.is_initialized()
    ):
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        started_dist = True
    try:
        return Trainer(cfg, resume=resume, log=log).train()
    finally:
        if started_dist:
            dist.destroy_process_group()
