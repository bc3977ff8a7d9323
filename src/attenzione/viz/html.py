"""A self-contained interactive HTML page for one sentence's attention.

The page inlines its CSS, JavaScript (``assets/``, shipped in the package) and the maps as
JSON, so it opens from ``file://`` with no network. It offers the three kinds, every layer,
every head or their average, a lines view (queries on the left, keys on the right, line weight
∝ attention, as in BertViz's head view) and a matrix view (masked cells hatched), and — when
given — one head's arithmetic for every query token, with the model's real numbers.

Given a decoding trace (:meth:`attenzione.translator.translator.Translator.trace`), the page
also holds the step-by-step player (``assets/player.js``, the same one the live page uses):
the steps on a slider, each step's top pieces with temperature / top-k / top-p applied in the
page to the logits the trace gives, the growing causal mask, the step's cross-attention on the
source and, for beam search, the tree of hypotheses. Re-translating (another word, parts
switched off) needs the server; the file says so.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from attenzione.viz.maps import AttentionMaps

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attenzione · attention of “{title}”</title>
<style>
{css}
{player_css}
</style>
</head>
<body>
<h1>attenzione · attention</h1>
<p class="sentence"><b>Source</b><span id="source"></span></p>
<div class="tokens" id="src-tokens" aria-label="source tokens"></div>
<p class="sentence"><b id="translation-label">Translation</b><span id="translation"></span></p>
<div class="tokens" id="tgt-tokens" aria-label="target tokens"></div>
<p class="hint legend-pieces"><span class="tok ws">word</span> a piece that starts a word
(SentencePiece's ▁) · <span class="tok cont">·ra</span> a piece that continues one ·
<span class="tok ws">␣</span> or <span class="tok ws">▁</span> a bare word start (a space)</p>
<section id="player" hidden aria-label="the decoding, step by step"></section>
<h2>Attention, every layer and head</h2>
<p class="hint what" id="what"></p>
<div class="controls">
  <span><label>kind</label><span class="seg" id="kinds"></span></span>
  <span><label for="layer">layer</label><select id="layer"></select></span>
  <span><label for="head">head</label><select id="head"></select></span>
  <span><label>view</label><span class="seg" id="views"></span></span>
  <span><label for="numbers">numbers</label><input type="checkbox" id="numbers"></span>
</div>
<div id="status"></div>
<div id="focus"></div>
<div id="view"></div>
<h2>One head, step by step</h2>
<div id="explain" class="scroll-x"></div>
<p class="hint">Decoder rows are labelled with the token each position predicts.
Weights are the model's own (reference attention kernel); nothing here is recomputed.
{meta}</p>
<script type="application/json" id="attention-data">{data}</script>
<script>
{js}
</script>
<script>
{player_js}
</script>
</body>
</html>
"""


def _asset(name: str) -> str:
    return (resources.files("attenzione.viz") / "assets" / name).read_text(encoding="utf-8")


def _safe_json(obj: Any) -> str:
    """JSON that cannot close the surrounding <script> element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render_html(
    maps: AttentionMaps,
    *,
    explain: dict[str, Any] | None = None,
    trace: dict[str, Any] | None = None,
) -> str:
    """The page as a string. ``explain`` (from
    :func:`attenzione.translator.explain.explanation_data`)
    adds the step-by-step panel for one head, every query token of it; ``trace`` (a
    ``Trace.to_dict()``) adds the decoding player. The trace's own ``attention`` is the maps
    again, so it is left out (the player reads the page's maps)."""
    data = maps.to_dict()
    if explain is not None:
        data["explain"] = explain
    if trace is not None:
        data["trace"] = {k: v for k, v in trace.items() if k != "attention"}
    meta = " ".join(f"{html.escape(k)}: {html.escape(str(v))}." for k, v in data["meta"].items())
    return _TEMPLATE.format(
        title=html.escape(maps.source[:60]),
        css=_asset("viewer.css"),
        js=_asset("viewer.js"),
        player_css=_asset("player.css"),
        player_js=_asset("player.js"),
        data=_safe_json(data),
        meta=meta,
    )


def save_html(
    maps: AttentionMaps,
    path: str | Path,
    *,
    explain: dict[str, Any] | None = None,
    trace: dict[str, Any] | None = None,
) -> Path:
    """Write the page (``attention.html`` by convention) and return its path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(maps, explain=explain, trace=trace), encoding="utf-8")
    return out
