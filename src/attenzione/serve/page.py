"""The page at ``/`` and the interactive API docs at ``/docs``, both self-contained.

The page is the attention viewer of ``attenzione attention`` made live: the same CSS and
JavaScript (``viz/assets``), mounted again for each sentence shown, plus a small script
(``serve/assets/page.js``) that translates as you type (debounced by the server's
``frontendTimeout``), lists the sentences with their confidence and the alternatives, and
shows the chosen sentence's attention. The text is translated without attention (every map
of every layer and head is ~100 kB a sentence); the viewer asks for the one sentence it shows
and keeps what it got. Below it, the decoding player of ``viz/assets/player.js`` (the one the
saved page has) steps through the sentence's decoding (``POST /trace``, asked when wanted), and
re-translates it from another word or with heads switched off; "Explain the selected head"
asks for one head's arithmetic (``/trace`` with ``explain``). When the server translates
documents (``filesTranslation`` in the settings), a "Translate a file" section below the
attention viewer sends the chosen file to ``/translate_file`` and links the translation
(``/download_file/…``). The panels "inside the model" ask ``/journey``, ``/training``,
``/occlusion`` for the sentence shown, and ``/embeddings`` for a word's nearest pieces in the
model's own embedding table (or A − B + C). Everything is inlined; the only requests the page
makes go to the server that served it.

``/docs`` is Swagger UI from the ``swagger-ui-bundle`` package, its two files served by this
server (``/docs/assets/…``); without that package, a plain page points to ``/spec``.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from typing import Any

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attenzione · live translation and attention</title>
<link rel="icon" href="data:,">
<style>
{viewer_css}
{player_css}
{page_css}
</style>
</head>
<body>
<header class="top">
  <h1>attenzione</h1><span id="lang-pair">{source_name} → {target_name}</span>
  <button type="button" id="swap" hidden title="Translate the other way"
    aria-label="Swap languages">⇄</button>
  <nav><a href="docs">API docs</a><a href="spec">OpenAPI</a></nav>
</header>
<div id="key-row"><label for="api-key">API key</label> <input id="api-key" size="40"
  autocomplete="off"></div>
<main id="text-translation">
<div class="io">
  <div><label for="input" id="source-name">{source_name}</label>
  <textarea id="input" placeholder="Type or paste {source_name}…" autofocus{maxlength}
    aria-describedby="counter">{initial}</textarea>
  <div class="under"><span id="counter"></span></div></div>
  <div><label for="output" id="target-name">{target_name}</label><div id="output" aria-live="polite"
    aria-busy="false"></div>
  <div class="under"><span id="busy" role="status"></span><span id="meta-conf"></span></div>
  </div>
</div>
<div id="error" role="alert"></div>
<p id="alternatives-label" class="hint" hidden>Alternatives</p>
<ol id="alternatives" aria-labelledby="alternatives-label"></ol>
</main>
<section id="analysis">
<table id="sentences" aria-label="sentences"></table>
<p id="attention-note" class="hint" role="status"></p>
<section id="viewer-section" hidden aria-busy="false">
<h2>Attention of the selected sentence</h2>
<p class="sentence"><b>Source</b><span id="source"></span></p>
<div class="tokens" id="src-tokens" aria-label="source tokens"></div>
<p class="sentence"><b id="translation-label">Translation</b><span id="translation"></span></p>
<div class="tokens" id="tgt-tokens" aria-label="target tokens"></div>
<p class="hint legend-pieces"><span class="tok ws">word</span> a piece that starts a word
(SentencePiece's ▁) · <span class="tok cont">·ra</span> a piece that continues one ·
<span class="tok ws">␣</span> or <span class="tok ws">▁</span> a bare word start (a space)</p>
<p class="hint"><span class="hover-word">Hover</span> a token of the
<span class="target-lang">{target_name}</span> translation to light up the
<span class="source-lang">{source_name}</span> tokens it attended to;
<span class="click-word">click</span> it for the pieces the model could have written there
(the decoding, step by step, below).
Word alignment: <span id="alignment"></span></p>
<p id="alignment-caution" class="pl-caution" role="note"></p>
<div class="controls">
  <span><label>kind</label><span class="seg" id="kinds"></span></span>
  <span><label for="layer">layer</label><select id="layer"></select></span>
  <span><label for="head">head</label><select id="head"></select></span>
  <span><label>view</label><span class="seg" id="views"></span></span>
  <span><label for="numbers">numbers</label><input type="checkbox" id="numbers"></span>
</div>
<p class="hint what" id="what"></p>
<div id="status"></div>
<div id="focus"></div>
<div id="view"></div>
<h3>One head, step by step</h3>
<p><button type="button" id="explain-load" class="pl-action">Explain the selected head</button>
<span class="hint">the kind, layer and head chosen above (head 0 for the average)</span></p>
<div id="explain" class="scroll-x"></div>
<div class="controls" id="trace-controls">
  <span><label for="trace-beam">search</label><select id="trace-beam">
    <option value="">as translated</option><option value="1">greedy</option>
    <option value="2">beam 2</option><option value="4">beam 4</option>
    <option value="8">beam 8</option></select></span>
  <button type="button" id="trace-load" class="pl-action">Step through the decoding</button>
</div>
<p id="trace-note" class="hint" role="status"></p>
<section id="player" hidden aria-label="the decoding, step by step"></section>
</section>
<section id="inside" hidden aria-labelledby="inside-heading">
<h2 id="inside-heading">Inside the model</h2>
<section class="in-panel" id="journey-section" aria-labelledby="journey-heading">
<h3 id="journey-heading">One token's journey</h3>
<p class="hint" id="journey-hint"><span class="click-word-cap">Click</span> a piece of the
translation above (or press Enter on it) to follow how the model wrote it: from its embedding,
through every layer, to the softmax, each step checked against the model's own numbers.</p>
<p id="journey-note" class="hint in-note" role="status"></p>
<div id="journey-error" class="in-error" role="alert"></div>
<div id="journey"></div>
<p id="journey-back" hidden><a class="in-back" href="#viewer-section">↑ back to the
translation</a></p>
</section>
<section class="in-panel" id="training-section" aria-labelledby="training-heading">
<h3 id="training-heading">Training made visible: teacher forcing and the loss</h3>
<form id="training-form" class="in-form">
  <label for="reference">Reference</label>
  <input type="text" id="reference" autocomplete="off"
    placeholder="the translation a person would write">
  <button type="submit" id="training-go" class="in-btn">Teacher-force it</button>
</form>
<p id="training-note" class="hint in-note" role="status"></p>
<div id="training-error" class="in-error" role="alert"></div>
<div id="training-view"></div>
<h3 id="masks-heading">The masks of a padded batch</h3>
<form id="masks-form" class="in-form">
  <label for="other">Second sentence</label>
  <input type="text" id="other" autocomplete="off"
    placeholder="empty: the first half of the sentence's words" aria-describedby="masks-hint">
  <button type="submit" id="masks-go" class="in-btn">Draw the masks</button>
</form>
<p class="hint" id="masks-hint">The sentence and this one go through the model as one batch of
two, the shorter padded (the reference above is teacher-forced on the first).</p>
<div id="masks" aria-labelledby="masks-heading"></div>
</section>
<section class="in-panel" id="occlusion-section" aria-labelledby="occlusion-heading">
<h3 id="occlusion-heading">Attention is not alignment</h3>
<form id="occlusion-form" class="in-form">
  <label for="occlusion-words">Words to remove</label>
  <input type="text" id="occlusion-words" autocomplete="off"
    placeholder="empty: each word in turn; or: architecture, 2017.">
  <button type="submit" id="occlusion-go" class="in-btn">Remove each word and compare</button>
</form>
<p id="occlusion-note" class="hint in-note" role="status"></p>
<div id="occlusion-error" class="in-error" role="alert"></div>
<div id="occlusion"></div>
</section>
<section class="in-panel" id="embeddings-section" aria-labelledby="embeddings-heading">
<h3 id="embeddings-heading">The model's own embedding space</h3>
<p class="hint" id="embeddings-hint">Each piece of the vocabulary is a row of the model's
embedding table: the vector it reads for that piece. Pieces whose rows point the same way
(cosine near 1) are pieces the model learned to treat alike. A word of several pieces is the
mean of their rows; <code>▁king</code> names a piece itself.</p>
<div class="in-form">
  <label for="emb-side">Table</label>
  <select id="emb-side">
    <option value="source">source ({source_name})</option>
    <option value="target">target ({target_name})</option>
  </select>
</div>
<form id="emb-nearest-form" class="in-form">
  <label for="emb-word">Word or piece</label>
  <input type="text" id="emb-word" autocomplete="off" autocapitalize="off" spellcheck="false"
    placeholder="king, or ▁king">
  <button type="submit" id="emb-nearest-go" class="in-btn">Nearest pieces</button>
</form>
<p id="emb-nearest-note" class="hint in-note" role="status"></p>
<div id="emb-nearest-error" class="in-error" role="alert"></div>
<div id="emb-nearest"></div>
<form id="emb-analogy-form" class="in-form in-analogy" aria-label="analogy: A − B + C">
  <span class="in-term"><label for="emb-a">A</label>
  <input type="text" id="emb-a" autocomplete="off" autocapitalize="off" spellcheck="false"
    placeholder="walked"></span>
  <span class="in-term"><span class="in-op" aria-hidden="true">−</span>
  <label for="emb-b">B</label>
  <input type="text" id="emb-b" autocomplete="off" autocapitalize="off" spellcheck="false"
    placeholder="walk"></span>
  <span class="in-term"><span class="in-op" aria-hidden="true">+</span>
  <label for="emb-c">C</label>
  <input type="text" id="emb-c" autocomplete="off" autocapitalize="off" spellcheck="false"
    placeholder="run"></span>
  <button type="submit" id="emb-analogy-go" class="in-btn">A − B + C</button>
</form>
<p id="emb-analogy-note" class="hint in-note" role="status"></p>
<div id="emb-analogy-error" class="in-error" role="alert"></div>
<div id="emb-analogy"></div>
</section>
</section>
</section>
<section id="file-translation" hidden aria-labelledby="file-heading" data-state="idle">
<h2 id="file-heading">Translate a file</h2>
<form id="file-form" class="file-row">
  <label for="file-input">Document</label>
  <input type="file" id="file-input" name="file" aria-describedby="file-formats">
  <button type="submit" id="file-translate" disabled>Translate</button>
</form>
<p id="file-formats" class="hint"></p>
<p id="file-status" role="status" aria-live="polite"></p>
</section>
<p class="hint"><b>Confidence</b> is the geometric mean of the probabilities the model gave
each token it wrote (the mean log-probability per token, exponentiated): 100% means it had no
doubt; low values mark the sentences to check. Attention weights are the model's own;
nothing is recomputed for display.</p>
<script type="application/json" id="page-settings">{settings}</script>
<script>
{viewer_js}
</script>
<script>
{player_js}
</script>
<script>
{page_js}
</script>
</body>
</html>
"""

_DOCS = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>attenzione · API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({url: "spec", dom_id: "#swagger-ui", deepLinking: true});
</script>
</body>
</html>
"""

_DOCS_PLAIN = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>attenzione · API</title></head>
<body><h1>attenzione · API</h1>
<p>The OpenAPI document is at <a href="spec">/spec</a>. Install the <code>swagger-ui-bundle</code>
package for the interactive docs here.</p></body></html>
"""


#: The code of the panels "inside the model", fetched by the live page the first time it shows
#: them (``GET /assets/NAME``), so that the page itself stays small: name → content type.
LAZY_ASSETS = {"inside.js": "text/javascript", "inside.css": "text/css"}


def lazy_asset(name: str) -> tuple[str, str] | None:
    """One of :data:`LAZY_ASSETS`: its text and content type (None: no such asset)."""
    kind = LAZY_ASSETS.get(name)
    return None if kind is None else (_asset("attenzione.viz", name), kind)


def _asset(package: str, name: str) -> str:
    return (resources.files(package) / "assets" / name).read_text(encoding="utf-8")


def _safe_json(obj: Any) -> str:
    """JSON that cannot close the surrounding <script> element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def page_html(settings: dict[str, Any], initial: str = "") -> str:
    """The live page; ``settings`` is what ``/frontend/settings`` answers (its ``charLimit``,
    -1 for none, is the text box's ``maxlength``; its ``language``, the first direction, names
    the boxes before the script runs: the pair of any model, not only English → Italian)."""
    limit = int(settings.get("charLimit", -1))
    language = settings.get("language") or {}
    names = {
        f"{side}_name": html.escape(str((language.get(side) or {}).get("name", default)))
        for side, default in (("source", "English"), ("target", "Italian"))
    }
    return _PAGE.format(
        viewer_css=_asset("attenzione.viz", "viewer.css"),
        page_css=_asset("attenzione.serve", "page.css"),
        player_css=_asset("attenzione.viz", "player.css"),
        player_js=_asset("attenzione.viz", "player.js"),
        viewer_js=_asset("attenzione.viz", "viewer.js"),
        page_js=_asset("attenzione.serve", "page.js"),
        settings=_safe_json(settings),
        initial=html.escape(initial),
        maxlength=f' maxlength="{limit}"' if limit > 0 else "",
        **names,
    )


def docs_html(swagger: bool) -> str:
    """Swagger UI served from this server's own files (``swagger`` False: a plain page).

    Relative URLs: ``/docs`` is served without a trailing slash, so ``docs/assets/…`` and
    ``spec`` resolve against the server root."""
    return _DOCS if swagger else _DOCS_PLAIN
