// attenzione attention viewer. Reads the maps the model returned (embedded as JSON in the
// page) and draws them; it never recomputes attention. No network, no libraries.
// The live page (attenzione serve) calls window.attenzioneViewer.mount(data) for each new
// translation; the saved page mounts the data embedded in it once.
(function () {
  "use strict";

  let DATA = null;
  let built = false;
  let OPTS = {};
  // Touch screens have no hover: the page says "tap", and every hover has a click twin.
  // (hover: none) with a pointer: a touch screen. A browser with no pointer at all (headless)
  // also reports hover: none, but nobody taps it.
  const TOUCH = !!window.matchMedia && matchMedia("(hover: none)").matches && !matchMedia("(pointer: none)").matches;
  const HOVER = TOUCH ? "Tap" : "Hover or click";
  // One line of "what am I looking at" for each kind and each view.
  const WHAT = {
    encoder: "Encoder self-attention: each source token (a row, a query) reads every source token (the keys); nothing is masked but padding.",
    decoder: "Decoder self-attention: each position of the translation reads the pieces written before it; the causal mask hides the future.",
    cross: "Cross-attention: each piece of the translation (a query) reads the source tokens (the keys); rows are labelled with the piece each position predicts.",
    lines: "Lines: queries on the left, keys on the right, a line's width and darkness ∝ the weight.",
    matrix: "Matrix: one row a query, one column a key, colour ∝ the weight; hatched cells are masked (may not attend).",
  };
  const KINDS = ["encoder", "decoder", "cross"];
  const state = { kind: "cross", layer: 0, head: "avg", view: "lines", focus: null, pinned: false };

  // ---------------------------------------------------------------- helpers
  const $ = (sel) => document.querySelector(sel);
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
  const show = (tok) => tok.replace(/\u2581/g, "") || "\u2581";
  const fmt = (x, d) => (x === null || x === undefined ? "" : Number(x).toFixed(d === undefined ? 3 : d));

  // viridis, sampled at 9 stops, interpolated linearly
  const VIRIDIS = [
    [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
    [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
  ];
  function colour(t) {
    const x = Math.max(0, Math.min(1, t)) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    const f = x - i;
    const c = VIRIDIS[i].map((a, n) => Math.round(a + f * (VIRIDIS[i + 1][n] - a)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  // The (Q,K) map for the current selection: one head, or the average over heads.
  function currentMap() {
    const kind = DATA.kinds[state.kind];
    const layer = kind.weights[state.layer];
    if (state.head !== "avg") return layer[Number(state.head)];
    const nq = layer[0].length, nk = layer[0][0].length;
    const out = [];
    for (let i = 0; i < nq; i++) {
      const row = new Array(nk).fill(0);
      for (const head of layer) for (let j = 0; j < nk; j++) row[j] += head[i][j] / layer.length;
      out.push(row);
    }
    return out;
  }
  function selectionName() {
    const kind = DATA.kinds[state.kind];
    const head = state.head === "avg" ? "average of heads" : `head ${state.head}`;
    return `${kind.title} · layer ${state.layer} · ${head} · ${state.view} view`;
  }

  // ---------------------------------------------------------------- controls
  function buildControls() {
    const kinds = $("#kinds");
    for (const k of KINDS) {
      const b = el("button", { type: "button", "data-kind": k, id: `kind-${k}` }, k);
      b.addEventListener("click", () => { state.kind = k; state.focus = null; state.pinned = false; syncLayers(); render(); });
      kinds.appendChild(b);
    }
    $("#layer").addEventListener("change", (e) => { state.layer = Number(e.target.value); render(); });
    const head = $("#head");
    head.appendChild(el("option", { value: "avg" }, "average"));
    const nHeads = DATA.kinds.encoder.weights[0].length;
    for (let h = 0; h < nHeads; h++) head.appendChild(el("option", { value: String(h) }, `head ${h}`));
    head.addEventListener("change", (e) => { state.head = e.target.value; render(); });
    for (const v of ["lines", "matrix"]) {
      const b = el("button", { type: "button", "data-view": v, id: `view-${v}` }, v);
      b.addEventListener("click", () => { state.view = v; render(); });
      $("#views").appendChild(b);
    }
    $("#numbers").addEventListener("change", render);
    syncLayers();
  }
  function syncLayers() {
    const sel = $("#layer");
    const n = DATA.kinds[state.kind].weights.length;
    sel.innerHTML = "";
    for (let l = 0; l < n; l++) sel.appendChild(el("option", { value: String(l) }, `layer ${l}`));
    state.layer = Math.min(state.layer, n - 1);
    sel.value = String(state.layer);
  }

  // ---------------------------------------------------------------- focus (hover / click)
  function setFocus(side, index, pin) {
    if (state.pinned && !pin) return;
    if (pin) state.pinned = !(state.pinned && state.focus && state.focus.side === side && state.focus.index === index);
    state.focus = index === null ? null : { side, index };
    applyFocus();
  }
  function clearFocus() {
    if (state.pinned) return;
    state.focus = null;
    applyFocus();
  }
  function applyFocus() {
    const kind = DATA.kinds[state.kind];
    const map = currentMap();
    const f = state.focus;
    const out = $("#focus");
    if (!f) {
      out.textContent = `${HOVER} a token to see where its attention goes.`;
    } else if (f.side === "q") {
      const row = map[f.index];
      const pairs = row.map((w, j) => [w, j]).filter(([, j]) => kind.mask[f.index][j]);
      pairs.sort((a, b) => b[0] - a[0]);
      const top = pairs.slice(0, 5).map(([w, j]) => `${show(kind.cols[j])} ${fmt(w, 2)}`).join(", ");
      out.textContent = `query “${show(kind.rows[f.index])}” (${f.index}) attends to: ${top}`;
      const best = pairs.length ? show(kind.cols[pairs[0][1]]) : "";
      if (state.kind === "cross" && (best === "<eos>" || /^[\p{P}\p{S}]+$/u.test(best.replace(/^\u00b7/, "")))) {
        out.textContent += ` — caution: its strongest link goes to “${best}”, where heads rest when no word is needed; not an alignment.`;
      }
    } else {
      const col = map.map((row, i) => [row[f.index], i]).filter(([, i]) => kind.mask[i][f.index]);
      col.sort((a, b) => b[0] - a[0]);
      const top = col.slice(0, 5).map(([w, i]) => `${show(kind.rows[i])} ${fmt(w, 2)}`).join(", ");
      out.textContent = `key “${show(kind.cols[f.index])}” (${f.index}) is attended by: ${top}`;
    }
    document.body.dataset.focus = f ? `${f.side}${f.index}` : "";
    if (state.view === "lines") focusLines(f); else focusMatrix(f);
    renderExplain();
  }

  // ---------------------------------------------------------------- lines view
  // Laid out for the box it is drawn in: each side as wide as its longest token (at most
  // 170 px), the lines between them up to 300 px, at least 90. What still does not fit (a
  // phone, long tokens) is scaled down whole by the viewBox rather than hidden past the
  // box's edge: the keys side must be seen without scrolling.
  function linesLayout(kind, box) {
    const charW = 7.9;  // 13 px monospace
    const side = (toks, head) => Math.min(170, Math.max(48,
      8 + charW * Math.max(head.length, ...toks.map((t) => show(t).length))));
    const left = side(kind.rows, "queries"), right = side(kind.cols, "keys");
    const room = box > 0 ? box - left - right : 300;
    const gap = Math.max(90, Math.min(300, room));
    return { leftX: left, rightX: left + gap, width: Math.round(left + gap + right) };
  }
  function renderLines(map) {
    const kind = DATA.kinds[state.kind];
    const rowH = 22, pad = 12;
    const { leftX, rightX, width } = linesLayout(kind, $("#view").clientWidth);
    const n = Math.max(kind.rows.length, kind.cols.length);
    const height = n * rowH + 2 * pad;
    const svg = svgEl("svg", {
      class: "lines", width, height, viewBox: `0 0 ${width} ${height}`,
      preserveAspectRatio: "xMinYMin meet",
    });
    const yq = (i) => pad + (i + 0.5) * rowH;
    const lines = svgEl("g");
    svg.appendChild(lines);
    for (let i = 0; i < kind.rows.length; i++) {
      for (let j = 0; j < kind.cols.length; j++) {
        if (!kind.mask[i][j]) continue;
        const w = map[i][j];
        if (w < 0.005) continue;
        lines.appendChild(svgEl("line", {
          x1: leftX + 6, y1: yq(i), x2: rightX - 6, y2: yq(j),
          "stroke-width": (0.6 + 4 * w).toFixed(2), "stroke-opacity": (0.9 * w).toFixed(3),
          "data-q": i, "data-k": j, "data-w": w.toFixed(4),
        }));
      }
    }
    kind.rows.forEach((tok, i) => {
      const t = svgEl("text", { x: leftX, y: yq(i) + 4, "text-anchor": "end", "data-q": i, class: "qtok" }, show(tok));
      t.addEventListener("mouseenter", () => setFocus("q", i, false));
      t.addEventListener("mouseleave", clearFocus);
      t.addEventListener("click", () => setFocus("q", i, true));
      svg.appendChild(t);
    });
    kind.cols.forEach((tok, j) => {
      const t = svgEl("text", { x: rightX, y: yq(j) + 4, "data-k": j, class: "ktok" }, show(tok));
      t.addEventListener("mouseenter", () => setFocus("k", j, false));
      t.addEventListener("mouseleave", clearFocus);
      t.addEventListener("click", () => setFocus("k", j, true));
      svg.appendChild(t);
    });
    svg.appendChild(svgEl("text", { x: leftX, y: 10, "text-anchor": "end", fill: "#5f6b76" }, "queries"));
    svg.appendChild(svgEl("text", { x: rightX, y: 10, fill: "#5f6b76" }, "keys"));
    return svg;
  }
  function focusLines(f) {
    for (const line of document.querySelectorAll("svg.lines line")) {
      const on = !f || (f.side === "q" ? line.dataset.q == f.index : line.dataset.k == f.index);
      line.style.display = on ? "" : "none";
    }
    for (const t of document.querySelectorAll("svg.lines text.qtok, svg.lines text.ktok")) {
      const isQ = t.classList.contains("qtok");
      const idx = Number(isQ ? t.dataset.q : t.dataset.k);
      t.classList.toggle("hot", !!f && ((f.side === "q") === isQ) && f.index === idx);
      let dim = false;
      if (f) {
        const kind = DATA.kinds[state.kind];
        dim = f.side === "q" ? !isQ && !kind.mask[f.index][idx] : isQ && !kind.mask[idx][f.index];
      }
      t.classList.toggle("dim", dim);
    }
  }

  // ---------------------------------------------------------------- matrix view
  function renderMatrix(map) {
    const kind = DATA.kinds[state.kind];
    let vmax = 1e-6;
    map.forEach((row, i) => row.forEach((w, j) => { if (kind.mask[i][j]) vmax = Math.max(vmax, w); }));
    const table = el("table", { class: "matrix" + ($("#numbers").checked ? " numbers" : "") });
    const head = el("tr");
    head.appendChild(el("th"));
    kind.cols.forEach((tok, j) => {
      const th = el("th", { class: "col", "data-k": j }, show(tok));
      th.addEventListener("mouseenter", () => setFocus("k", j, false));
      th.addEventListener("mouseleave", clearFocus);
      th.addEventListener("click", () => setFocus("k", j, true));
      head.appendChild(th);
    });
    table.appendChild(head);
    kind.rows.forEach((tok, i) => {
      const tr = el("tr", { "data-q": i });
      const th = el("th", { class: "row", "data-q": i }, show(tok));
      th.addEventListener("mouseenter", () => setFocus("q", i, false));
      th.addEventListener("mouseleave", clearFocus);
      th.addEventListener("click", () => setFocus("q", i, true));
      tr.appendChild(th);
      map[i].forEach((w, j) => {
        const allowed = kind.mask[i][j];
        const td = el("td", { class: allowed ? "cell" : "masked", "data-q": i, "data-k": j });
        if (allowed) {
          td.style.background = colour(w / vmax);
          td.style.color = w / vmax > 0.6 ? "#000" : "#fff";
          td.textContent = fmt(w, 2);
          td.title = `${show(tok)} → ${show(kind.cols[j])}: ${fmt(w, 4)}`;
        } else {
          td.title = `${show(tok)} → ${show(kind.cols[j])}: masked (may not attend)`;
        }
        td.addEventListener("mouseenter", () => setFocus("q", i, false));
        td.addEventListener("click", () => setFocus("q", i, true));
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    const legend = el("div", { class: "legend" });
    legend.appendChild(el("span", {}, "0"));
    const bar = el("span", { class: "bar" });
    bar.style.background = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(colour).join(",")})`;
    legend.appendChild(bar);
    legend.appendChild(el("span", {}, fmt(vmax, 2)));
    const sw = el("span", { class: "sw" });
    sw.style.background = "repeating-linear-gradient(45deg,#d9d9d9,#d9d9d9 3px,#b9b9b9 3px,#b9b9b9 5px)";
    legend.appendChild(sw);
    legend.appendChild(el("span", {}, "masked"));
    // the table scrolls inside its own box (a phone): its labels are never cut by the page
    const wrap = el("div");
    const scroll = el("div", { class: "scroll-x matrix-box" });
    scroll.appendChild(table);
    wrap.appendChild(scroll);
    wrap.appendChild(legend);
    return wrap;
  }
  function focusMatrix(f) {
    for (const tr of document.querySelectorAll("table.matrix tr[data-q]")) {
      tr.classList.toggle("hot", !!f && f.side === "q" && Number(tr.dataset.q) === f.index);
    }
    for (const th of document.querySelectorAll("table.matrix th.col")) {
      th.classList.toggle("hot", !!f && f.side === "k" && Number(th.dataset.k) === f.index);
    }
  }

  // ---------------------------------------------------------------- explanation
  function renderExplain() {
    const box = $("#explain");
    if (!box) return;
    const ex = DATA.explain;
    if (!ex) {
      box.innerHTML = "";
      box.appendChild(el("p", { class: "hint" }, OPTS.explainHint ||
        "Run attenzione attention … --explain --layer L --head H to see one head's arithmetic here."));
      return;
    }
    const matches = state.kind === ex.kind && state.layer === ex.layer && String(state.head) === String(ex.head);
    let i = ex.token;
    if (matches && state.focus && state.focus.side === "q") i = state.focus.index;
    box.innerHTML = "";
    const title = el("p", {});
    title.appendChild(el("b", {}, `${DATA.kinds[ex.kind].title}, layer ${ex.layer}, head ${ex.head}: query ${i} “${show(ex.query_tokens[i])}”`));
    box.appendChild(title);
    if (!matches) {
      const go = el("button", { type: "button", id: "explain-go" }, "show this head");
      go.addEventListener("click", () => {
        state.kind = ex.kind; state.head = String(ex.head); syncLayers(); state.layer = ex.layer;
        $("#layer").value = String(ex.layer); $("#head").value = String(ex.head); render();
      });
      box.appendChild(el("p", { class: "hint" }, "The explained head is not the one selected above. "));
      box.lastChild.appendChild(go);
    } else {
      box.appendChild(el("p", { class: "hint" }, `${HOVER} a query token to explain it.`));
    }
    const vec = (v) => "[" + v.map((x) => fmt(x, 4)).join(", ") + "]";
    const step = (label, values) => {
      const p = el("div", { class: "step" });
      p.appendChild(el("b", {}, label + " "));
      if (values.length === 0) {
        // a heading for the table that follows
      } else if (values.length <= 8) {
        p.appendChild(el("span", { class: "vec" }, vec(values)));
      } else {  // the first 8 values, all of them on request
        const more = el("details");
        more.appendChild(el("summary", { class: "vec" },
          vec(values.slice(0, 8)).slice(0, -1) + `, … ] (${values.length} values)`));
        more.appendChild(el("span", { class: "vec" }, vec(values)));
        p.appendChild(more);
      }
      box.appendChild(p);
    };
    step("1. query q_i = x_i W^Q_h =", ex.q[i]);
    step(`2–3. scores q_i·k_j, divided by √d_head = √${ex.d_head} = ${fmt(Math.sqrt(ex.d_head), 4)}, masked keys → −∞, softmax:`, []);
    const table = el("table", { id: "explain-table" });
    const hr = el("tr");
    for (const h of ["j", "key", "k_j (first 4)", "q·k_j", "÷ √d_head", "α_ij", "model's α_ij"]) hr.appendChild(el("th", {}, h));
    table.appendChild(hr);
    ex.key_tokens.forEach((tok, j) => {
      const allowed = ex.allowed[i][j];
      const tr = el("tr", allowed ? {} : { class: "masked" });
      tr.appendChild(el("td", {}, String(j)));
      tr.appendChild(el("td", {}, show(tok)));
      tr.appendChild(el("td", {}, vec(ex.k[j].slice(0, 4))));
      tr.appendChild(el("td", {}, fmt(ex.scores[i][j], 4)));
      tr.appendChild(el("td", {}, allowed ? fmt(ex.scaled[i][j], 4) : "−∞ (masked)"));
      tr.appendChild(el("td", { class: "alpha" }, fmt(ex.weights[i][j], 4)));
      tr.appendChild(el("td", {}, fmt(ex.model_weights[i][j], 4)));
      table.appendChild(tr);
    });
    const scroll = el("div", { class: "scroll-x" });
    scroll.appendChild(table);
    box.appendChild(scroll);
    step("4. z_i = Σ_j α_ij v_j =", ex.z[i]);
    step("5. this head's share of the output, z_i W^O_h =", ex.projected[i]);
    box.appendChild(el("p", { class: "hint" },
      `Largest difference between these α and the model's own weights: ${Number(ex.max_abs_difference[i]).toExponential(1)}.`));
  }

  // ---------------------------------------------------------------- render
  function render() {
    for (const b of document.querySelectorAll("#kinds button")) b.classList.toggle("on", b.dataset.kind === state.kind);
    for (const b of document.querySelectorAll("#views button")) b.classList.toggle("on", b.dataset.view === state.view);
    $("#head").value = String(state.head);
    const map = currentMap();
    const view = $("#view");
    view.innerHTML = "";
    view.appendChild(state.view === "lines" ? renderLines(map) : renderMatrix(map));
    $("#status").textContent = selectionName();
    const what = $("#what");
    if (what) what.textContent = `What am I looking at: ${WHAT[state.kind]} ${WHAT[state.view]}`;
    document.body.dataset.selection = `${state.kind}/${state.layer}/${state.head}/${state.view}`;
    if (state.focus) {
      const kind = DATA.kinds[state.kind];
      const limit = state.focus.side === "q" ? kind.rows.length : kind.cols.length;
      if (state.focus.index >= limit) { state.focus = null; state.pinned = false; }
    }
    applyFocus();
  }

  // Hovering a target token chip lights the source chips by its cross-attention (the
  // selected layer and head when cross-attention is shown, else the last layer).
  function crossRow(i) {
    const kind = DATA.kinds.cross;
    const l = state.kind === "cross" ? Math.min(state.layer, kind.weights.length - 1) : kind.weights.length - 1;
    const layer = kind.weights[l];
    if (state.head !== "avg") return layer[Number(state.head)][i];
    return layer[0][i].map((_, j) => layer.reduce((s, head) => s + head[i][j], 0) / layer.length);
  }
  function lightSources(i) {
    const row = i === null ? null : crossRow(i);
    const max = row ? Math.max(...row, 1e-6) : 1;
    document.querySelectorAll("#src-tokens .tok").forEach((chip, j) => {
      const w = row ? row[j] : 0;
      chip.style.background = row ? `rgba(255,176,0,${(w / max).toFixed(3)})` : "";
      chip.dataset.w = row ? w.toFixed(4) : "";
    });
    document.querySelectorAll("#tgt-tokens .tok").forEach((chip, k) => chip.classList.toggle("hot", k === i));
    document.body.dataset.lit = i === null ? "" : `t${i}`;
  }

  let litPinned = false;
  function header() {
    litPinned = false;
    $("#source").textContent = DATA.source;
    $("#translation").textContent = DATA.translation;
    $("#translation-label").textContent = DATA.teacher_forced ? "Reference (teacher-forced)" : "Translation";
    const fill = (id, toks, hover) => {
      const box = $(id);
      box.innerHTML = "";
      toks.forEach((t, i) => {
        const shown = show(t);
        const kind = t.startsWith("<") && t.endsWith(">") ? " special" : shown.startsWith("\u00b7") ? " cont" : " ws";
        const chip = el("span", { class: "tok" + kind, "data-i": i }, shown);
        if (hover) {
          chip.addEventListener("mouseenter", () => { if (!litPinned) lightSources(i); });
          chip.addEventListener("mouseleave", () => { if (!litPinned) lightSources(null); });
          // a tap (or a click) keeps the lighting until the next one
          chip.addEventListener("click", () => {
            litPinned = !(litPinned && document.body.dataset.lit === `t${i}`);
            lightSources(litPinned ? i : null);
            // the player (when the page has one) opens this step's alternatives
            document.dispatchEvent(new CustomEvent("attenzione:target", { detail: { index: i, token: t } }));
          });
          // Enter or Space on a focused piece does what a click does
          chip.addEventListener("keydown", (e) => {
            if (e.key === "Enter" || e.key === " ") { e.preventDefault(); chip.click(); }
          });
          chip.setAttribute("role", "button");
          chip.setAttribute("tabindex", "0");
        }
        box.appendChild(chip);
      });
    };
    fill("#src-tokens", DATA.src_tokens, false);
    fill("#tgt-tokens", DATA.out_tokens, true);
  }

  function mount(data, opts) {
    DATA = data;
    OPTS = opts || {};
    state.focus = null;
    state.pinned = false;
    header();
    if (!built) {
      buildControls();
      built = true;
      if (opts && opts.lastLayer) { state.layer = DATA.kinds[state.kind].weights.length - 1; $("#layer").value = String(state.layer); }
    } else {
      syncLayers();
    }
    if (DATA.explain) { state.kind = DATA.explain.kind; syncLayers(); state.layer = DATA.explain.layer; state.head = String(DATA.explain.head); $("#layer").value = String(state.layer); }
    render();
  }

  window.attenzioneViewer = { mount };
  const embedded = document.getElementById("attention-data");
  if (embedded) mount(JSON.parse(embedded.textContent));
})();
