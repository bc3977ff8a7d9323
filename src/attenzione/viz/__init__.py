"""Seeing attention: the maps of one sentence, heatmaps, and an interactive HTML page.

From Python::

    from attenzione.translator.translator import Translator
    from attenzione.viz import plot_attention, save_heatmaps, save_html

    maps = Translator.from_pretrained().attention("The cat is sleeping on the sofa.")
    plot_attention(maps, "cross", layer=2)        # a matplotlib figure, e.g. in a notebook
    save_heatmaps(maps, "out/")                   # encoder/decoder/cross .png and _grid.png
    save_html(maps, "out/attention.html")         # the interactive viewer
"""

from attenzione.viz.heatmaps import plot_attention, plot_grid, save_heatmaps
from attenzione.viz.html import render_html, save_html
from attenzione.viz.maps import KINDS, AttentionMaps, display_token, display_tokens

__all__ = [
    "KINDS",
    "AttentionMaps",
    "display_token",
    "display_tokens",
    "plot_attention",
    "plot_grid",
    "render_html",
    "save_heatmaps",
    "save_html",
]
