// attenzione decoding player: one sentence's decoding, step by step, drawn from the trace
// the model returned (Translator.trace(...).to_dict()). It recomputes nothing the model
// computed: temperature, top-k and top-p are applied here to the logits the trace gives
// (its N most likely pieces at each step), which is what a sampler would do with them.
// The saved page (attenzione attention --trace) mounts the trace embedded in it; the live
// page (attenzione serve) mounts each trace it fetches and passes `live` callbacks, which
// re-translate on the server (a forced prefix, parts switched off). Without them the page
// says that this needs the server. No network, no libraries.
(function () {
  "use strict";

  // (hover: none) with a pointer: a touch screen. A browser with no pointer at all (headless)
  // also reports hover: none, but nobody taps it.
  const TOUCH = !!window.matchMedia && matchMedia("(hover: none)").matches && !matchMedia("(pointer: none)").matches;
  const HOVER = TOUCH ? "tap" : "hover";
  const CLICK = TOUCH ? "Tap" : "Click";
  const WS = "\u2581";  // SentencePiece's word start
  let T = null;         // the trace shown
  let MAPS = null;      // its attention maps (src_tokens, kinds)
  let OPTS = {};
  const state = { step: 0, layer: 0, temperature: 1, topK: 0, topP: 1, alts: null };

  // ---------------------------------------------------------------- helpers
  const root = () => document.getElementById("player");
  const q = (sel) => root().querySelector(sel);
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svgEl(tag, attrs, text) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const special = (p) => p.startsWith("<") && p.endsWith(">");
  const ALNUM = /^[\p{L}\p{N}]+$/u;
  // a piece's label in the drawings: a word start without its mark, a continuation with "·"
  const label = (p) => (special(p) ? p : p.startsWith(WS) ? p.slice(1) || "\u2423" : ALNUM.test(p) ? "\u00b7" + p : p);
  // A piece as a reader sees it: "▁" (a word start) becomes a mark, a piece that continues a
  // word gets a leading "·" (as display_tokens does for the attention maps).
  function pieceChip(piece, tag, attrs) {
    const node = el(tag || "span", attrs || {});
    node.classList.add("piece");
    if (special(piece)) {
      node.classList.add("special");
      node.textContent = piece;
    } else if (piece.startsWith(WS)) {
      node.classList.add("ws");
      node.textContent = piece.slice(1) || "\u2423";  // a bare "▁": a space of its own
    } else {
      // as display_tokens does: "·" before a piece of letters or digits that continues a word
      node.classList.add("cont");
      node.textContent = ALNUM.test(piece) ? "\u00b7" + piece : piece;
    }
    node.title = node.title || `piece “${piece.replace(/\u2581/g, "▁")}”`;
    return node;
  }
  // Source tokens come as display_tokens made them ("·" marks a continuation).
  function sourceChip(token, attrs) {
    const node = el("span", attrs);
    node.classList.add("piece");
    if (special(token)) node.classList.add("special");
    else if (token.startsWith("\u00b7")) node.classList.add("cont");
    else node.classList.add("ws");
    node.textContent = token;
    return node;
  }
  // Pieces → text, as the tokenizer would: join, "▁" → space, trim.
  const decode = (pieces) => pieces.filter((p) => !special(p)).join("").replace(/\u2581/g, " ").trim();
  const bare = (tok) => tok.replace(/[\u2581\u00b7]/g, "");
  const isPunct = (tok) => special(tok) || /^[\p{P}\p{S}]+$/u.test(bare(tok));
  function pct(p) {
    const x = 100 * p;
    if (x >= 0.01 || x === 0) return x.toFixed(2) + "%";
    return x.toExponential(1) + "%";
  }
  const num = (x) => (x < 0 ? "\u2212" + String(-x) : String(x));  // the data's own digits

  // softmax(logit / T) over the pieces given; then the top-k / top-p cut (renormalised).
  function distribution(top) {
    const z = top.map((t) => t.logit / state.temperature);
    const m = Math.max(...z);
    const e = z.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    const p = e.map((v) => v / s);
    const order = p.map((v, i) => i).sort((a, b) => p[b] - p[a]);
    const k = state.topK > 0 ? Math.min(state.topK, top.length) : top.length;
    const cut = new Set();
    let mass = 0;
    for (const i of order.slice(0, k)) {
      if (cut.size > 0 && mass >= state.topP - 1e-12) break;
      cut.add(i);
      mass += p[i];
    }
    return { p, cut, mass, greedy: order[0] };
  }

  // ---------------------------------------------------------------- the skeleton
  function build() {
    const box = root();
    box.innerHTML = "";
    box.classList.add("player");
    const nLayers = T.steps[0] ? T.steps[0].cross_attention.length : 0;
    box.insertAdjacentHTML("beforeend", `
<h2>Decoding, step by step</h2>
<p class="hint what" id="pl-what"></p>
<div class="pl-compare" id="pl-compare" hidden></div>
<div class="pl-out" id="pl-out" role="group" aria-label="output pieces"></div>
<p class="hint" id="pl-out-hint"></p>
<div class="pl-nav">
  <button type="button" id="pl-prev" aria-label="Previous step">◀</button>
  <input type="range" id="pl-step" aria-label="Step" min="0" step="1">
  <button type="button" id="pl-next" aria-label="Next step">▶</button>
  <span id="pl-step-label" aria-live="polite"></span>
</div>
<p id="pl-prefix" class="pl-prefix"></p>
<div class="pl-alts" id="pl-alts" hidden></div>
<div class="pl-grid">
  <div class="pl-panel">
    <h3>The next piece</h3>
    <p class="hint what" id="pl-bars-what"></p>
    <div class="pl-knobs">
      <label>T <input type="range" id="pl-temp" aria-label="Temperature" min="0.05" max="3" step="0.05" value="1"><output id="pl-temp-v"></output></label>
      <label>top-k <input type="range" id="pl-topk" aria-label="Top-k" min="1" step="1"><output id="pl-topk-v"></output></label>
      <label>top-p <input type="range" id="pl-topp" aria-label="Top-p" min="0.05" max="1" step="0.01" value="1"><output id="pl-topp-v"></output></label>
    </div>
    <div class="pl-bars" id="pl-bars" role="list" aria-label="most likely next pieces"></div>
    <p class="pl-sample" id="pl-sample"></p>
    <p class="hint" id="pl-bar-status" role="status"></p>
  </div>
  <div class="pl-panel">
    <h3>Where this step looked</h3>
    <label class="pl-layer">decoder layer <select id="pl-layer" aria-label="Decoder layer"></select></label>
    <p class="hint what">Cross-attention: how much the step's query (averaged over heads) read
    each source token; darker is more.</p>
    <div class="pl-src" id="pl-src" aria-label="source tokens shaded by this step's cross-attention"></div>
    <p class="pl-caution" id="pl-caution" role="note"></p>
    <p class="hint what">Self-attention under the causal mask: row i is step i reading the
    pieces fed before it (averaged over heads); hatched cells are the future, masked; the
    triangle grows by one row a step.</p>
    <div class="pl-scroll" id="pl-mask"></div>
  </div>
</div>
<div class="pl-panel" id="pl-beam-panel">
  <h3>The search</h3>
  <p class="hint what" id="pl-beam-what"></p>
  <div class="pl-scroll" id="pl-beam"></div>
  <p class="hint" id="pl-beam-status" role="status"></p>
</div>
<div class="pl-panel" id="pl-ablate-panel">
  <h3>Switch parts off</h3>
  <div id="pl-ablate"></div>
</div>`);
    const layer = q("#pl-layer");
    for (let l = 0; l < nLayers; l++) layer.appendChild(el("option", { value: String(l) }, `layer ${l}`));
    state.layer = Math.max(0, nLayers - 1);
    layer.value = String(state.layer);
    layer.addEventListener("change", () => { state.layer = Number(layer.value); drawStep(); });
    const slider = q("#pl-step");
    slider.addEventListener("input", () => go(Number(slider.value)));
    q("#pl-prev").addEventListener("click", () => go(state.step - 1));
    q("#pl-next").addEventListener("click", () => go(state.step + 1));
    const knob = (id, key, fmt) => {
      const input = q(id);
      const out = q(id + "-v");
      const sync = () => { state[key] = Number(input.value); out.textContent = fmt(state[key]); drawBars(); };
      input.addEventListener("input", sync);
      input.addEventListener("change", sync);
      if (state[key]) input.value = String(state[key]);
      out.textContent = fmt(Number(input.value));
    };
    knob("#pl-temp", "temperature", (v) => v.toFixed(2));
    knob("#pl-topk", "topK", (v) => String(v));
    knob("#pl-topp", "topP", (v) => v.toFixed(2));
  }

  // ---------------------------------------------------------------- per trace
  function header() {
    const n = T.steps.length;
    const how = T.method === "beam" ? `beam search (beam ${T.beam})` : T.method === "sample" ? "sampling" : "greedy search";
    const forced = T.prefix ? ` The first pieces were forced: “${T.prefix}”.` : "";
    const off = (T.ablate || []).length ? ` Switched off: ${T.ablate.join(", ")}.` : "";
    q("#pl-what").textContent = `What am I looking at: the ${n} steps of ${how} writing “${T.translation}”. ` +
      `At each step the decoder reads the source and the pieces written so far and scores every piece of its ` +
      `vocabulary; the search writes one.${forced}${off}`;
    const out = q("#pl-out");
    out.innerHTML = "";
    T.steps.forEach((s, i) => {
      const chip = pieceChip(s.chosen, "button", { type: "button", "data-step": i, "aria-label": `step ${i}: ${s.chosen.replace(WS, "")}` });
      if (s.forced) chip.classList.add("forced");
      chip.addEventListener("click", () => { go(i); openAlts(i); });
      out.appendChild(chip);
    });
    q("#pl-out-hint").textContent = `${CLICK} a piece to see what else the model could have written there` +
      (OPTS.live ? ", and re-translate from another word." : ".");
    const slider = q("#pl-step");
    slider.max = String(Math.max(0, n - 1));
    const nTop = Math.max(1, ...T.steps.map((s) => s.top.length));
    const topk = q("#pl-topk");
    topk.max = String(nTop);
    if (!state.topK || state.topK > nTop) state.topK = nTop;
    topk.value = String(state.topK);
    q("#pl-topk-v").textContent = String(state.topK);
    drawBeam();
    drawAblate();
  }

  function go(step) {
    const n = T.steps.length;
    state.step = Math.max(0, Math.min(n - 1, step));
    if (state.alts !== null && state.alts !== state.step) closeAlts();
    drawStep();
  }

  function drawStep() {
    const s = T.steps[state.step];
    const n = T.steps.length;
    root().dataset.step = String(state.step);
    q("#pl-step").value = String(state.step);
    q("#pl-prev").disabled = state.step === 0;
    q("#pl-next").disabled = state.step === n - 1;
    q("#pl-step-label").textContent = `step ${state.step} of ${n - 1}`;
    q("#pl-out").querySelectorAll("button").forEach((b, i) => {
      b.classList.toggle("done", i < state.step);
      b.classList.toggle("now", i === state.step);
      b.setAttribute("aria-pressed", String(i === state.step));
    });
    const pre = q("#pl-prefix");
    pre.innerHTML = "";
    pre.appendChild(el("b", {}, "Written so far: "));
    if (!s.prefix.length) pre.appendChild(el("span", { class: "hint" }, "nothing yet (the decoder is fed <bos>) "));
    s.prefix.forEach((p) => pre.appendChild(pieceChip(p)));
    pre.appendChild(el("span", { class: "arrow" }, " → "));
    const next = pieceChip(s.chosen);
    next.classList.add("now");
    pre.appendChild(next);
    if (s.forced) pre.appendChild(el("span", { class: "hint" }, " (forced: a piece of the prefix)"));
    drawBars();
    drawSource();
    drawMask();
    markBeamStep();
  }

  // ---------------------------------------------------------------- the bars
  function drawBars() {
    if (!T) return;
    const s = T.steps[state.step];
    const top = s.top;
    const d = distribution(top);
    q("#pl-bars-what").textContent = s.forced
      ? "A forced step: the prefix decides the piece, so only it is shown."
      : `Bars: softmax(logit / T) over the ${top.length} most likely pieces the model gave at this step, ` +
        "renormalised, then the top-k / top-p cut; the greedy pick is the longest bar. " +
        `${CLICK} a bar for the model's own numbers (over its whole vocabulary).`;
    const bars = q("#pl-bars");
    bars.innerHTML = "";
    const max = Math.max(...d.p, 1e-12);
    top.forEach((t, i) => {
      const row = el("div", {
        class: "pl-bar" + (d.cut.has(i) ? " in-cut" : " out-cut"), role: "listitem", tabindex: "0",
        "data-piece": t.piece, "data-p": d.p[i].toFixed(6), "data-logit": String(t.logit),
      });
      const name = el("span", { class: "pl-name" });
      name.appendChild(pieceChip(t.piece));
      if (i === d.greedy) name.appendChild(el("span", { class: "badge greedy" }, "greedy"));
      if (t.piece === s.chosen) name.appendChild(el("span", { class: "badge chosen" }, "written"));
      row.appendChild(name);
      const track = el("span", { class: "pl-track" });
      const fill = el("span", { class: "pl-fill" });
      fill.style.width = `${(100 * d.p[i] / max).toFixed(2)}%`;
      track.appendChild(fill);
      row.appendChild(track);
      row.appendChild(el("span", { class: "pl-pct" }, pct(d.p[i])));
      row.appendChild(el("span", { class: "pl-logit" }, `logit ${num(t.logit)}`));
      const detail = `${t.piece.replace(WS, "▁")}: logit ${num(t.logit)}, log-prob ${num(t.logprob)} over the whole ` +
        `vocabulary (p = ${pct(Math.exp(t.logprob))}); ${pct(d.p[i])} over these ${top.length} at T = ${state.temperature}` +
        (d.cut.has(i) ? " — inside the sampling cut" : " — outside the sampling cut");
      row.title = detail;
      const tell = () => { q("#pl-bar-status").textContent = detail; };
      row.addEventListener("click", tell);
      row.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); tell(); } });
      bars.appendChild(row);
    });
    const sample = q("#pl-sample");
    sample.innerHTML = "";
    const inCut = [...d.cut].sort((a, b) => d.p[b] - d.p[a]);
    sample.appendChild(el("b", {}, "Greedy writes "));
    sample.appendChild(pieceChip(top[d.greedy].piece));
    sample.appendChild(el("b", {}, inCut.length === 1 ? " · sampling could only pick it" : ` · sampling could pick ${inCut.length}: `));
    if (inCut.length > 1) {
      for (const i of inCut) {
        const c = pieceChip(top[i].piece);
        c.appendChild(el("small", {}, " " + pct(d.p[i] / d.mass)));
        sample.appendChild(c);
      }
    }
    sample.appendChild(el("span", { class: "hint" }, ` (top-k ${Math.min(state.topK || top.length, top.length)}, top-p ${state.topP.toFixed(2)}; renormalised inside the cut)`));
    root().dataset.top = top.length ? top[d.greedy].piece : "";
  }

  // ---------------------------------------------------------------- source shading
  function drawSource() {
    const s = T.steps[state.step];
    const row = s.cross_attention[state.layer] || [];
    const toks = MAPS ? MAPS.src_tokens : row.map((_, j) => `#${j}`);
    const box = q("#pl-src");
    box.innerHTML = "";
    const max = Math.max(...row, 1e-9);
    let best = 0;
    row.forEach((w, j) => { if (w > row[best]) best = j; });
    toks.forEach((tok, j) => {
      const w = row[j] || 0;
      const chip = sourceChip(tok, { "data-j": j, "data-w": w.toFixed(4), title: `${tok}: ${w}` });
      const a = w / max;
      chip.style.background = `rgba(255,176,0,${a.toFixed(3)})`;
      chip.appendChild(el("small", {}, " " + w.toFixed(2)));
      if (j === best) chip.classList.add("best");
      box.appendChild(chip);
    });
    const caution = q("#pl-caution");
    const tok = toks[best];
    if (tok !== undefined && isPunct(tok)) {
      caution.textContent = `Caution: this step's strongest link goes to “${tok}” (${row[best]}), ` +
        (tok === "<eos>" ? "the end of the source" : "punctuation") +
        ": heads often rest there when nothing else is needed, so read it as “no particular word”, not as an alignment.";
    } else {
      caution.textContent = "";
    }
  }

  // ---------------------------------------------------------------- the causal mask
  function drawMask() {
    const n = T.steps.length;
    const fed = ["<bos>", ...T.steps.slice(0, n - 1).map((s) => s.chosen)];
    const cell = 14, left = 84, topPad = 64;
    const width = left + n * cell + 4, height = topPad + n * cell + 4;
    const svg = svgEl("svg", { class: "pl-mask", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `causal self-attention, ${state.step + 1} of ${n} rows` });
    const defs = svgEl("defs");
    const pat = svgEl("pattern", { id: "pl-hatch", width: 5, height: 5, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
    pat.appendChild(svgEl("rect", { width: 5, height: 5, fill: "#e3e3e3" }));
    pat.appendChild(svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 5, stroke: "#b0b0b0", "stroke-width": 2 }));
    defs.appendChild(pat);
    svg.appendChild(defs);
    fed.forEach((p, j) => {
      if (j > state.step) return;  // the future is not written yet
      svg.appendChild(svgEl("text", {
        class: "col", transform: `translate(${left + j * cell + cell / 2 + 4},${topPad - 4}) rotate(-90)`,
      }, label(p).slice(0, 9)));
    });
    for (let i = 0; i < n; i++) {
      const y = topPad + i * cell;
      const shown = i <= state.step;
      if (shown) {
        svg.appendChild(svgEl("text", { class: "row" + (i === state.step ? " now" : ""), x: left - 4, y: y + cell - 3, "text-anchor": "end" },
          label(fed[i]).slice(0, 11)));
      }
      const weights = shown ? T.steps[i].self_attention[state.layer] || [] : [];
      const max = Math.max(...weights, 1e-9);
      for (let j = 0; j < n; j++) {
        const x = left + j * cell;
        if (j > i) {
          svg.appendChild(svgEl("rect", { class: "masked", x, y, width: cell - 1, height: cell - 1, fill: "url(#pl-hatch)" }));
        } else if (shown) {
          const w = weights[j] || 0;
          const r = svgEl("rect", { class: "cell", x, y, width: cell - 1, height: cell - 1,
            fill: `rgba(47,111,222,${(0.08 + 0.92 * w / max).toFixed(3)})`, "data-w": String(w) });
          r.appendChild(svgEl("title", {}, `step ${i} reads ${label(fed[j])}: ${w}`));
          svg.appendChild(r);
        } else {
          svg.appendChild(svgEl("rect", { class: "later", x, y, width: cell - 1, height: cell - 1, fill: "#f3f5f7" }));
        }
      }
    }
    const y = topPad + state.step * cell;
    svg.appendChild(svgEl("rect", { x: left - 1, y: y - 1, width: (state.step + 1) * cell + 1, height: cell + 1, fill: "none", stroke: "#b55d00", "stroke-width": 1.5 }));
    const box = q("#pl-mask");
    box.innerHTML = "";
    box.appendChild(svg);
  }

  // ---------------------------------------------------------------- the beam tree
  const TREE = { colW: 78, rowH: 24, left: 40, top: 18 };  // the tree's layout, in px
  function drawBeam() {
    const box = q("#pl-beam");
    box.innerHTML = "";
    const what = q("#pl-beam-what");
    q("#pl-beam-status").textContent = "";
    if (!T.beams || !T.beams.length) {
      what.textContent = T.method === "sample"
        ? "Sampling draws one piece a step: one hypothesis, no tree."
        : "Greedy search keeps one hypothesis, the most likely piece at each step: no tree to draw. Beam search (beam > 1) keeps several.";
      return;
    }
    what.textContent = `The beam as a tree: each column a step, each node a hypothesis's last piece. ` +
      `The ${T.beam} kept at each step go on (solid), pruned ones fade, finished ones (ending in <eos>) are squares, ` +
      `the winner's path is thick. ${TOUCH ? "Tap" : "Hover or click"} a node for its log-probability and score.`;
    const byStep = new Map();
    for (const b of T.beams) {
      if (!byStep.has(b.step)) byStep.set(b.step, []);
      byStep.get(b.step).push(b);
    }
    const rank = { kept: 0, finished: 0, pruned: 1 };
    for (const list of byStep.values()) list.sort((a, b) => rank[a.status] - rank[b.status] || b.log_prob - a.log_prob);
    const steps = Math.max(...byStep.keys()) + 1;
    const rows = Math.max(...[...byStep.values()].map((l) => l.length));
    const { colW, rowH, left, top } = TREE;
    const width = left + steps * colW + 20, height = top + rows * rowH + 8;
    const pos = new Map();
    for (const [st, list] of byStep) list.forEach((b, r) => pos.set(b.id, { x: left + st * colW + 10, y: top + r * rowH + rowH / 2 }));
    const onPath = new Set(T.path || []);
    const svg = svgEl("svg", { class: "pl-tree", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "beam search tree" });
    const band = svgEl("rect", { class: "band", x: 0, y: 0, width: colW, height, fill: "#fff4d6" });
    svg.appendChild(band);
    for (let st = 0; st < steps; st++) svg.appendChild(svgEl("text", { class: "stepno", x: left + st * colW + 10, y: 11 }, String(st)));
    const rootY = top + rowH / 2;
    svg.appendChild(svgEl("text", { class: "root", x: 2, y: rootY + 4 }, "<bos>"));
    const edges = svgEl("g");
    const nodes = svgEl("g");
    svg.appendChild(edges);
    svg.appendChild(nodes);
    for (const b of T.beams) {
      const p = pos.get(b.id);
      const from = b.parent === null || b.parent === undefined ? { x: 34, y: rootY } : pos.get(b.parent);
      if (!from) continue;
      const win = onPath.has(b.id);
      edges.appendChild(svgEl("line", { class: `edge ${b.status}${win ? " win" : ""}`, x1: from.x + 4, y1: from.y, x2: p.x - 4, y2: p.y }));
      const g = svgEl("g", { class: `node ${b.status}${win ? " win" : ""}`, "data-id": b.id, "data-status": b.status, "data-step": b.step, tabindex: "0" });
      if (b.status === "finished") g.appendChild(svgEl("rect", { x: p.x - 5, y: p.y - 5, width: 10, height: 10 }));
      else g.appendChild(svgEl("circle", { cx: p.x, cy: p.y, r: 4.5 }));
      const shown = label(b.piece);
      g.appendChild(svgEl("text", { x: p.x + 7, y: p.y + 4 }, shown.length > 9 ? shown.slice(0, 8) + "…" : shown));
      const info = `step ${b.step}: “${b.piece.replace(WS, "▁")}” · ${b.status}${win ? " · on the winner's path" : ""} · ` +
        `total log-prob ${num(b.log_prob)}` + (b.score !== null && b.score !== undefined ? ` · score ${num(b.score)} (length-normalised)` : "");
      g.appendChild(svgEl("title", {}, info));
      const tell = () => { q("#pl-beam-status").textContent = info; if (b.step < T.steps.length) go(b.step); };
      g.addEventListener("click", tell);
      g.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); tell(); } });
      nodes.appendChild(g);
    }
    box.appendChild(svg);
    markBeamStep();
  }
  function markBeamStep() {
    const band = root().querySelector("svg.pl-tree rect.band");
    if (!band) return;
    band.setAttribute("x", String(TREE.left + state.step * TREE.colW + 2));
    band.setAttribute("width", String(TREE.colW - 4));
  }

  // ---------------------------------------------------------------- alternatives
  function openAlts(i) {
    state.alts = i;
    const s = T.steps[i];
    const box = q("#pl-alts");
    box.hidden = false;
    box.innerHTML = "";
    const head = el("p", {});
    head.appendChild(el("b", {}, `At step ${i}, after “${decode(s.prefix) || "<bos>"}”, the model could have written:`));
    head.appendChild(el("span", { class: "hint" }, " (its probabilities over the whole vocabulary)"));
    box.appendChild(head);
    const list = el("div", { class: "pl-alt-list", role: "group", "aria-label": `alternatives at step ${i}` });
    for (const t of s.top) {
      const b = pieceChip(t.piece, "button", { type: "button", class: "pl-alt", "data-piece": t.piece });
      b.appendChild(el("small", {}, " " + pct(Math.exp(t.logprob))));
      b.setAttribute("aria-label", `${t.piece.replace(WS, "")} (${pct(Math.exp(t.logprob))})`);
      if (t.piece === s.chosen) b.classList.add("chosen");
      if (special(t.piece)) b.disabled = true;
      b.addEventListener("click", () => force(decode([...s.prefix, t.piece])));
      list.appendChild(b);
    }
    box.appendChild(list);
    const form = el("form", { class: "pl-word" });
    const input = el("input", { type: "text", id: "pl-word", "aria-label": "Your word", placeholder: "or type a word", autocomplete: "off" });
    const send = el("button", { type: "submit", id: "pl-word-go" }, "Re-translate from here");
    form.appendChild(input);
    form.appendChild(send);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const w = input.value.trim();
      if (!w) return;
      const before = decode(s.prefix);
      force((before ? before + " " : "") + w);
    });
    box.appendChild(form);
    const close = el("button", { type: "button", class: "pl-close", "aria-label": "Close the alternatives" }, "×");
    close.addEventListener("click", closeAlts);
    box.appendChild(close);
    const note = el("p", { class: "hint", id: "pl-alts-note", role: "status" });
    note.textContent = OPTS.live
      ? "Picking one forces the translation to start with it (the pieces before it, then your word) and decodes the rest."
      : "Re-translating from another word needs the server: run attenzione serve and open its page (this file has no model in it).";
    box.appendChild(note);
    root().dataset.alts = String(i);
  }
  function closeAlts() {
    state.alts = null;
    const box = q("#pl-alts");
    box.hidden = true;
    box.innerHTML = "";
    root().dataset.alts = "";
  }
  function force(prefix) {
    if (!OPTS.live || !OPTS.live.retranslate) {
      const note = q("#pl-alts-note");
      if (note) note.textContent = `Forcing “${prefix}” needs the server: run attenzione serve and open its page; this saved file cannot translate.`;
      return;
    }
    OPTS.live.retranslate({ prefix, ablate: (T.ablate || []).join(",") }, `starting with “${prefix}”`);
  }

  // ---------------------------------------------------------------- switching parts off
  function drawAblate() {
    const box = q("#pl-ablate");
    box.innerHTML = "";
    if (!OPTS.live || !OPTS.live.retranslate) {
      box.appendChild(el("p", { class: "hint", id: "pl-ablate-note" },
        "Switching heads or layers off re-translates the sentence: that needs the server (attenzione serve); this saved file has no model in it." +
        ((T.ablate || []).length ? ` This trace was made with ${T.ablate.join(", ")} off.` : "")));
      return;
    }
    box.appendChild(el("p", { class: "hint what" },
      "Untick a head to switch it off (its share of the attention output becomes zero), then re-translate: the new translation " +
      "appears beside this one. A layer with every head off is switched off whole."));
    const off = new Set(T.ablate || []);
    const kinds = (MAPS && MAPS.kinds) || {};
    const grid = el("div", { class: "pl-ablate-grid" });
    for (const kind of ["encoder", "decoder", "cross"]) {
      const k = kinds[kind];
      if (!k) continue;
      const nL = k.weights.length, nH = k.weights[0].length;
      const fs = el("fieldset", {});
      fs.appendChild(el("legend", {}, kind === "decoder" ? "decoder self-attention" : kind === "cross" ? "cross-attention" : "encoder self-attention"));
      for (let l = 0; l < nL; l++) {
        const row = el("div", { class: "pl-heads" });
        row.appendChild(el("span", { class: "pl-l" }, `layer ${l}`));
        for (let h = 0; h < nH; h++) {
          const id = `pl-ab-${kind}-${l}-${h}`;
          const lab = el("label", { for: id, title: `${kind} layer ${l} head ${h}` });
          const cb = el("input", { type: "checkbox", id, "data-part": `${kind}:${l}.${h}`, "aria-label": `${kind} layer ${l} head ${h}` });
          cb.checked = !(off.has(`${kind}:${l}.${h}`) || off.has(`${kind}:${l}.*`) || off.has(`${kind}:${l}`));
          lab.appendChild(cb);
          lab.appendChild(el("span", {}, String(h)));
          row.appendChild(lab);
        }
        fs.appendChild(row);
      }
      grid.appendChild(fs);
    }
    box.appendChild(grid);
    const pos = el("label", { class: "pl-pos" });
    const cb = el("input", { type: "checkbox", id: "pl-ab-positions", "aria-label": "positional encoding" });
    cb.checked = !off.has("positions");
    pos.appendChild(cb);
    pos.appendChild(document.createTextNode(" positional encoding (untick: the model sees the words without their order)"));
    box.appendChild(pos);
    const go = el("button", { type: "button", id: "pl-ablate-go" }, "Re-translate with these off");
    go.addEventListener("click", () => {
      const parts = [];
      for (const fs of box.querySelectorAll("fieldset")) {
        for (const row of fs.querySelectorAll(".pl-heads")) {
          const boxes = [...row.querySelectorAll("input")];
          const offs = boxes.filter((b) => !b.checked);
          if (offs.length === boxes.length && boxes.length) parts.push(boxes[0].dataset.part.replace(/\.\d+$/, ".*"));
          else offs.forEach((b) => parts.push(b.dataset.part));
        }
      }
      if (!cb.checked) parts.push("positions");
      OPTS.live.retranslate({ ablate: parts.join(","), prefix: T.prefix || "" }, parts.length ? `with ${parts.join(", ")} off` : "with every part on");
    });
    box.appendChild(go);
  }

  // ---------------------------------------------------------------- the comparison
  function drawCompare() {
    const box = q("#pl-compare");
    const before = OPTS.before;
    if (!before) { box.hidden = true; return; }
    box.hidden = false;
    box.innerHTML = "";
    const a = el("div", { class: "was" });
    a.appendChild(el("b", {}, "Before: "));
    a.appendChild(el("span", { id: "pl-before" }, before.translation));
    const b = el("div", { class: "now" });
    b.appendChild(el("b", {}, `Now (${OPTS.why || "re-translated"}): `));
    b.appendChild(el("span", { id: "pl-after" }, T.translation));
    box.appendChild(a);
    box.appendChild(b);
  }

  // a target token tapped in the attention viewer above: its step's alternatives
  document.addEventListener("attenzione:target", (e) => {
    if (!T || !root() || root().hidden) return;
    const i = e.detail.index;
    if (i < 0 || i >= T.steps.length) return;
    go(i);
    openAlts(i);
    const box = q("#pl-alts");
    if (box.scrollIntoView) box.scrollIntoView({ block: "nearest" });
  });

  // ---------------------------------------------------------------- keys
  document.addEventListener("keydown", (e) => {
    if (!T || !root() || root().hidden) return;
    const t = e.target;
    const tag = t && t.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && t.type !== "checkbox") || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "ArrowLeft") { e.preventDefault(); go(state.step - 1); }
    else if (e.key === "ArrowRight") { e.preventDefault(); go(state.step + 1); }
  });

  // trace: Trace.to_dict() (its "attention" may be left out: then opts.maps or the page's).
  // opts: {maps, live: {retranslate(fields, why)}, before: {translation}, why}
  function mount(trace, opts) {
    if (!root() || !trace || !trace.steps || !trace.steps.length) return;
    T = trace;
    OPTS = opts || {};
    MAPS = trace.attention || OPTS.maps || null;
    state.alts = null;
    build();
    header();
    drawCompare();
    go(0);
    root().hidden = false;
    root().dataset.method = T.method;
    root().dataset.translation = T.translation;
  }

  // the alternatives of step i (the live page, once it has loaded the trace)
  function open(i) {
    if (!T || i < 0 || i >= T.steps.length) return;
    go(i);
    openAlts(i);
  }

  window.attenzionePlayer = { mount, open, decode, distribution: (top, t, k, p) => {
    const saved = [state.temperature, state.topK, state.topP];
    [state.temperature, state.topK, state.topP] = [t, k, p];
    const d = distribution(top);
    [state.temperature, state.topK, state.topP] = saved;
    return d;
  } };
  const embedded = document.getElementById("attention-data");
  if (embedded && root()) {
    const data = JSON.parse(embedded.textContent);
    if (data.trace) mount(data.trace, { maps: data });
  }
})();
