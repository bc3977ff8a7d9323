"""The end-of-run picture: training loss, dev loss and dev BLEU against steps."""

from __future__ import annotations

import json
from pathlib import Path


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
