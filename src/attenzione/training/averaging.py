"""Checkpoint averaging: the mean of the weights a run had at its last few checkpoints.

Vaswani et al. (2017) translated with the average of the last 5 checkpoints, written at
10-minute intervals: late in training, successive weights wander around a minimum the optimizer
keeps overshooting, and their mean lies closer to it. It costs nothing at training time and
gives a model that is usually a little better than any one of them.

A run keeps the weights of its periodic checkpoints in ``RUN/snapshots/`` (``attenzione train
--keep-snapshots K`` keeps the last K; :func:`attenzione.translator.model_dir.save_snapshot` writes
them); :func:`average_run` averages the last few into a model directory that translates like any
other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from attenzione.training.report import CURVES_NAME
from attenzione.training.run_state import METRICS_NAME
from attenzione.translator import model_dir
from attenzione.translator.model_dir import SNAPSHOTS, snapshot_path, snapshot_steps


def average_weights(
    files: Sequence[Path], weights: Sequence[float] | None = None
) -> dict[str, Tensor]:
    """The element-wise mean (in float64, returned as float32) of several weight files, or
    with ``weights`` their weighted sum (one weight per file; the caller makes them sum to 1).

    The files must hold the same tensors with the same shapes: anything else is a ValueError
    naming the first file that differs.
    """
    if not files:
        raise ValueError("nothing to average: no weight files given")
    if weights is None:
        weights = [1.0 / len(files)] * len(files)
    if len(weights) != len(files):
        raise ValueError(f"{len(weights)} weights for {len(files)} weight files")
    total: dict[str, Tensor] = {}
    for i, (path, w) in enumerate(zip(files, weights, strict=True)):
        state = model_dir.load_weights_file(path)
        if i == 0:
            total = {k: w * v.to(torch.float64) for k, v in state.items()}
            continue
        if state.keys() != total.keys():
            diff = sorted(state.keys() ^ total.keys())[:3]
            raise ValueError(f"{path} holds other tensors than {files[0]} ({', '.join(diff)})")
        for k, v in state.items():
            if v.shape != total[k].shape:
                raise ValueError(
                    f"{path}: {k} has shape {tuple(v.shape)}, {files[0]} {tuple(total[k].shape)}"
                )
            total[k] += w * v.to(torch.float64)
    return {k: v.to(torch.float32) for k, v in total.items()}


def _same_tokenizers(a: Path, b: Path) -> bool:
    """Whether two model directories hold byte-identical tokenizer files."""
    for sub in (model_dir.SRC_TOKENIZER, model_dir.TGT_TOKENIZER):
        files_a = sorted(p.name for p in (a / sub).glob("*") if p.is_file())
        files_b = sorted(p.name for p in (b / sub).glob("*") if p.is_file())
        if files_a != files_b:
            return False
        if any((a / sub / f).read_bytes() != (b / sub / f).read_bytes() for f in files_a):
            return False
    return True


# what a training run writes at its top: the trainer's, never a place for another model
RUN_ENTRIES = ("data", "last", "best", SNAPSHOTS, model_dir.SRC_TOKENIZER, model_dir.TGT_TOKENIZER,
               METRICS_NAME, CURVES_NAME)  # fmt: skip


def refuse_run_entry(run_dir: Path, out: Path) -> None:
    """Refuse an ``out`` that is the run, holds it, or is (or lies inside) one of the entries
    the trainer writes there (``last/``, ``snapshots/`` …, or their hidden twins): writing the
    average there would destroy the run (``--resume`` needs ``last/``). A folder of its own
    inside the run (``RUN/avg5``) is fine."""
    run, target = run_dir.resolve(), out.resolve()
    if target == run or target in run.parents:
        raise ValueError(f"--out {out} is or holds the run {run_dir}: give another --out")
    if run in target.parents:
        first = target.relative_to(run).parts[0]
        if first.lstrip(".").split(".")[0] in RUN_ENTRIES or first in RUN_ENTRIES:
            raise ValueError(
                f"--out {out} is inside the run's own {first}: give another --out "
                f"(such as {run_dir / 'avg'})"
            )


def average_run(
    run_dir: str | Path,
    out: str | Path,
    *,
    last: int = 5,
    steps: Sequence[int] | None = None,
    blend_with: str | Path | None = None,
    blend_weight: float = 0.0,
) -> dict[str, object]:
    """Average the run's last ``last`` snapshots (or the given ``steps``) into model dir ``out``.

    The config, tokenizers and word list come from the run's ``last/`` checkpoint;
    ``info.json`` is its info with the averaged steps added. With ``blend_with`` (a model
    directory of the same shape and tokenizers, typically the one the run was initialised
    from) the mean is moved ``blend_weight`` of the way towards it: a fine-tuned model moved
    part of the way back to the model it started from keeps most of what the fine-tune taught
    and less of what it cost elsewhere (weight-space ensembling, Wortsman et al. 2022,
    "Robust fine-tuning of zero-shot models"); ``info.json`` records it. Returns that info.
    """
    run_dir = Path(run_dir)
    refuse_run_entry(run_dir, Path(out))
    source = model_dir.find_model_dir(run_dir / "last")
    if source is None:
        raise FileNotFoundError(f"{run_dir / 'last'} not found: is {run_dir} a training run?")
    have = snapshot_steps(run_dir)
    if steps is None:
        if last < 1:
            raise ValueError(f"--last must be >= 1, got {last}")
        if not have:
            raise FileNotFoundError(
                f"{run_dir / SNAPSHOTS} holds no snapshots (train with --keep-snapshots K)"
            )
        chosen = have[-last:]
    else:
        missing = [s for s in steps if s not in have]
        if missing:
            raise FileNotFoundError(
                f"no snapshot of step {missing[0]} in {run_dir / SNAPSHOTS} (it has {have})"
            )
        chosen = sorted(set(steps))
    files = [snapshot_path(run_dir, s) for s in chosen]
    weights = None  # the plain mean
    if blend_with is not None:
        # (1 - W) * mean + W * other: one weighted sum, W on the other model's weights
        if not 0.0 <= blend_weight <= 1.0:
            raise ValueError(f"the blend weight must be between 0 and 1, got {blend_weight}")
        other = model_dir.find_model_dir(blend_with)
        if other is None:
            raise FileNotFoundError(f"{blend_with} is not a model directory")
        if not _same_tokenizers(source, other):
            raise ValueError(f"{blend_with} has other tokenizers than {run_dir}: cannot blend")
        weights = [(1.0 - blend_weight) / len(files)] * len(files) + [blend_weight]
        files.append(other / model_dir.WEIGHTS_NAME)
    state = average_weights(files, weights)
    model = model_dir.load_model(source)
    model_dir.check_state(model, state, f"the snapshots in {run_dir / SNAPSHOTS}")
    model.load_state_dict(state, strict=False)
    src_tok, tgt_tok = model_dir.load_tokenizers(source, model.config)
    info = model_dir.read_info(source)
    info.update(
        {
            "step": chosen[-1],
            "averaged_steps": chosen,
            "dev_bleu_greedy": None,  # the scores of last/ are not the average's
            "dev_chrf_greedy": None,
        }
    )
    for key in [k for k in info if k.startswith("dev_") and k.endswith("_greedy")]:
        info[key] = None
    if blend_with is not None:
        info["blended_with"] = {"model": str(blend_with), "weight": blend_weight}
    words = model_dir.read_words(source)  # last/'s known words, the run's training targets
    translated = model_dir.read_words(source, model_dir.TRANSLATED_NAME)
    model_dir.write_model_dir(
        out, model, src_tok, tgt_tok, info=info, words=words, translated=translated
    )
    return info
