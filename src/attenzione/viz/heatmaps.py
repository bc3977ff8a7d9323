"""Matplotlib heatmaps of attention maps: one large view, or a layers × heads grid.

Masked cells (keys a query was not allowed to see: padding, the future) are drawn hatched
grey, never as a zero-weight cell, so a reader can tell "attended with weight 0.00" from "could
not attend". Rows are queries, columns keys; the colour bar gives the weight.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from attenzione.viz.maps import KIND_TITLES, KINDS, AttentionMaps, display_tokens

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CMAP = "viridis"
MASKED_COLOUR = "#d9d9d9"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _draw(ax: Axes, weights: np.ndarray, allowed: np.ndarray, vmax: float):
    data = np.ma.masked_array(weights, mask=~allowed)
    ax.set_facecolor(MASKED_COLOUR)
    ax.patch.set_hatch("///")
    ax.patch.set_edgecolor("#9a9a9a")
    return ax.imshow(data, cmap=CMAP, vmin=0.0, vmax=vmax, aspect="auto", interpolation="nearest")


def plot_attention(
    maps: AttentionMaps,
    kind: str,
    layer: int | None = None,
    head: int | None = None,
    *,
    ax: Axes | None = None,
    annotate: bool | None = None,
) -> Figure:
    """One large heatmap: a head of a layer, the head average (``head`` None) or the average
    over layers and heads (both None). Returns the figure (save it or show it in a notebook)."""
    plt = _pyplot()
    w = maps.select(kind, layer, head).numpy()
    allowed = maps.mask(kind).numpy().astype(bool)
    rows, cols = maps.axes(kind)
    n_q, n_k = w.shape
    if ax is None:
        size = (max(5.0, 0.36 * n_k + 2.6), max(4.0, 0.32 * n_q + 1.8))
        fig, ax = plt.subplots(figsize=size, layout="constrained")
    else:
        fig = ax.figure
    img = _draw(ax, w, allowed, vmax=max(float(w[allowed].max()) if allowed.any() else 1.0, 1e-6))
    ax.set_xticks(range(n_k), display_tokens(cols), rotation=60, ha="right")
    ax.set_yticks(range(n_q), display_tokens(rows))
    ax.tick_params(labelsize=9 if max(n_q, n_k) <= 30 else 7)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (predicting)" if kind != "encoder" else "query")
    which = (
        "average of all layers and heads"
        if layer is None and head is None
        else f"layer {layer}, average of heads"
        if head is None
        else f"all layers, head {head}"
        if layer is None
        else f"layer {layer}, head {head}"
    )
    ax.set_title(f"{KIND_TITLES[kind]} — {which}", fontsize=11)
    if annotate is None:
        annotate = max(n_q, n_k) <= 14
    if annotate:
        for i in range(n_q):
            for j in range(n_k):
                if allowed[i, j]:
                    colour = "black" if w[i, j] > 0.6 * img.norm.vmax else "white"
                    ax.text(
                        j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour
                    )
    fig.colorbar(img, ax=ax, label="attention weight", shrink=0.85)
    return fig


def plot_grid(maps: AttentionMaps, kind: str) -> Figure:
    """Every layer (rows) and head (columns) of one kind, small, tokens on the outer axes."""
    plt = _pyplot()
    w = maps.weights(kind).numpy()
    n_layers, n_heads = w.shape[:2]
    allowed = maps.mask(kind).numpy().astype(bool)
    rows, cols = maps.axes(kind)
    n_q, n_k = allowed.shape
    cell = max(1.6, min(3.2, 0.13 * max(n_q, n_k)))
    fig, axes = plt.subplots(
        n_layers,
        n_heads,
        figsize=(cell * n_heads + 1.6, cell * n_layers + 1.0),
        squeeze=False,
        layout="constrained",
    )
    img = None
    for li in range(n_layers):
        for hi in range(n_heads):
            ax = axes[li][hi]
            img = _draw(ax, w[li, hi], allowed, vmax=1.0)
            ax.set_xticks([])
            ax.set_yticks([])
            if li == 0:
                ax.set_title(f"head {hi}", fontsize=9)
            if hi == 0:
                ax.set_ylabel(f"layer {li}", fontsize=9)
    small = max(n_q, n_k) <= 20
    if small:  # token labels on the outer axes only, when they fit
        for hi in range(n_heads):
            ax = axes[-1][hi]
            ax.set_xticks(range(n_k), display_tokens(cols), rotation=90, fontsize=6)
        for li in range(n_layers):
            ax = axes[li][0]
            ax.set_yticks(range(n_q), display_tokens(rows), fontsize=6)
    fig.suptitle(f"{KIND_TITLES[kind]}: every layer and head", fontsize=11)
    if img is not None:
        fig.colorbar(img, ax=axes, label="attention weight", shrink=0.8)
    return fig


def save_heatmaps(
    maps: AttentionMaps,
    out_dir: str | Path,
    *,
    layer: int | None = None,
    head: int | None = None,
    dpi: int = 120,
) -> list[Path]:
    """Write ``{kind}.png`` (the large view) and ``{kind}_grid.png`` for the three kinds.

    The large view shows ``layer``/``head`` when given; otherwise the last layer's head
    average (the encoder's and decoder's last layers are the ones the output reads from).
    """
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for kind in KINDS:
        chosen_layer = layer if layer is not None else maps.layers(kind) - 1
        if chosen_layer >= maps.layers(kind):
            raise ValueError(
                f"layer {chosen_layer} is out of range: the {kind} has layers "
                f"0..{maps.layers(kind) - 1}"
            )
        for name, fig in (
            (f"{kind}.png", plot_attention(maps, kind, chosen_layer, head)),
            (f"{kind}_grid.png", plot_grid(maps, kind)),
        ):
            path = out / name
            fig.savefig(path, dpi=dpi)
            plt.close(fig)
            written.append(path)
    return written
