"""What a run tells people: ``info.json`` in each checkpoint, a line per evaluation, and
``curves.png`` at the end; ``init.json`` keeps what a warm-started run started from.

Kept apart from the loop (:mod:`attenzione.training.trainer`) because none of it changes what
the run learns: these are facts about the run, gathered from its config, data, model and
progress whenever a checkpoint is written. ``info.json`` is for people and for the commands
that read a model directory back (its languages, pipeline, tags and number format;
:mod:`attenzione.translator.registry`); the trainer hands it to
:func:`attenzione.translator.model_dir.write_model_dir`, which writes it inside the
checkpoint's atomic swap.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from attenzione import atomic
from attenzione.config import TrainConfig
from attenzione.model.transformer import Transformer
from attenzione.pipeline.pairs import default_pipeline
from attenzione.training.data_prep import PreparedData
from attenzione.training.run_state import Progress

INIT_NAME = "init.json"  # in the run directory: what a warm-started run started from
CURVES_NAME = "curves.png"  # in the run directory: drawn from metrics.jsonl at the end


def run_info(
    cfg: TrainConfig,
    data: PreparedData,
    model: Transformer,
    progress: Progress,
    *,
    init: dict[str, Any] | None,
    attribution: str | None,
) -> dict[str, Any]:
    """The ``info.json`` of a checkpoint written now: the run, its data and its last scores."""
    evals = [h for h in progress.history if "dev_bleu" in h]
    last_eval: dict[str, Any] = evals[-1] if evals else {}
    tags = tuple(getattr(data.src_tok, "tags", ()))
    return {
        "preset": cfg.preset,
        # encoder + decoder layers: the preset's, or the run's own (--enc/--dec-layers)
        "layers": f"{model.config.n_enc_layers}+{model.config.n_dec_layers}",
        "step": progress.step,
        "epoch": progress.epoch,
        "train_hours": round(progress.train_seconds / 3600, 3),
        "dev_bleu_greedy": last_eval.get("dev_bleu"),
        "dev_chrf_greedy": last_eval.get("dev_chrf"),
        "parameters": model.num_parameters(),
        "max_src_tokens": cfg.max_src_tokens,
        "number_format": data.number_format,
        "source_language": cfg.src_lang,
        "target_language": cfg.tgt_lang,
        # the text steps and ranking terms the model applies: its pair's (pipeline.pairs)
        "pipeline": default_pipeline(cfg.src_lang, cfg.tgt_lang),
        "data": str(cfg.data),
        "corpora": [first_corpus(cfg), *cfg.extra_data],
        # corpus tags the model reads (attenzione.data.mixing); translation uses none
        # unless asked (--tag), or default_tag when a model sets one
        **({"tags": list(tags), "default_tag": None} if tags else {}),
        **_init_info(init, progress),
        **{f"dev_{n}_bleu_greedy": last_eval.get(f"dev_{n}_bleu") for n in data.extra_dev},
        "notes": list(data.notes),
        "attribution": attribution,
    }


def first_corpus(cfg: TrainConfig) -> str:
    """The first corpus as ``--data`` named it: PATH, or PATH:WEIGHT when weighted."""
    weight = cfg.data_weight
    return str(cfg.data) if weight == 1 else f"{cfg.data}:{weight:g}"


def _init_info(init: dict[str, Any] | None, progress: Progress) -> dict[str, Any]:
    """What a warm-started run started from, and its hours counting that model's."""
    if init is None:
        return {}
    hours = progress.train_seconds / 3600 + (init.get("train_hours") or 0.0)
    return {"initialised_from": init, "train_hours_with_init": round(hours, 3)}


# ---------------------------------------------------------------------------- init.json
def save_init(run_dir: Path, init: dict[str, Any] | None) -> None:
    """Keep what a warm start started from in ``RUN/init.json`` (``--resume`` reads it back);
    None, a cold start, removes a stale file: it is not this run's."""
    path = run_dir / INIT_NAME
    if init is None:
        path.unlink(missing_ok=True)
    else:
        atomic.write_text(path, json.dumps(init, indent=2) + "\n")


def load_init(run_dir: Path) -> dict[str, Any] | None:
    """``RUN/init.json``, or None for a run that started cold."""
    path = run_dir / INIT_NAME
    if not path.is_file():
        return None
    init: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return init


# ---------------------------------------------------------------------------- the log
def evaluation_line(record: dict[str, Any], extra_dev: Iterable[str], train_seconds: float) -> str:
    """The line an evaluation logs: dev loss, perplexity, BLEU and chrF of every dev set."""
    extra = "".join(
        f"  {n}: BLEU {record[f'dev_{n}_bleu']:.2f} chrF {record[f'dev_{n}_chrf']:.2f}"
        for n in extra_dev
    )
    return (
        f"step {record['step']}: dev loss {record['dev_loss']:.3f}  ppl {record['dev_ppl']:.2f}  "
        f"BLEU {record['dev_bleu']:.2f}  chrF {record['dev_chrf']:.2f}{extra}  "
        f"({train_seconds / 3600:.2f} train h)"
    )


# ---------------------------------------------------------------------------- curves.png
def draw_curves(metrics_path: Path, run_dir: Path, log: Callable[[str], object]) -> None:
    """``RUN/curves.png`` from the metrics log; a failure is logged: a plot must never lose a
    finished run."""
    try:
        plot_curves(metrics_path, run_dir / CURVES_NAME)
    except Exception as exc:
        log(f"could not draw {CURVES_NAME}: {exc}")


def plot_curves(metrics_path: str | Path, out_path: str | Path) -> Path:
    """Read ``metrics.jsonl`` and draw loss (left) and BLEU (right) curves into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(line) for line in Path(metrics_path).read_text().splitlines() if line]
    train = [(r["step"], r["train_loss"]) for r in records if "train_loss" in r]
    dev = [(r["step"], r["dev_loss"], r["dev_bleu"]) for r in records if "dev_bleu" in r]
    fig, (ax_loss, ax_bleu) = plt.subplots(1, 2, figsize=(11, 4))
    if train:
        ax_loss.plot(*zip(*train, strict=True), label="train (label-smoothed)", lw=1)
    if dev:
        steps, losses, bleus = zip(*dev, strict=True)
        ax_loss.plot(steps, losses, "o-", label="dev (label-smoothed)")
        ax_bleu.plot(steps, bleus, "o-", color="tab:green")
    ax_loss.set(xlabel="step", ylabel="loss per token", title="Loss")
    ax_loss.legend()
    ax_bleu.set(xlabel="step", ylabel="BLEU", title="Dev BLEU (greedy, sacreBLEU)")
    for ax in (ax_loss, ax_bleu):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return Path(out_path)
