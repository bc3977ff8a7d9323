// attenzione inside the model: one token's journey through the whole decoder, the training
// view (teacher forcing, the loss at each position), the three masks of a padded batch,
// occlusion beside cross-attention ("attention is not alignment") and the model's own
// embedding space (a word's nearest pieces, A − B + C). It draws the service's answers —
// POST /journey (Translator.journey(...).to_dict()), /training (training.view.teacher_forced
// + padded_batch_masks), /occlusion (translator.occlusion), /embeddings
// (translator/embedding_space) — and recomputes none of their numbers: every value, check,
// loss, agreement and cosine shown is the answer's, rounded for display only. The page itself
// finds two things: the largest cell of each row of the occlusion grids (to outline it) and
// the colour scale of a grid (its largest |value|). No network, no libraries: the live page
// (serve/assets/page.js) fetches and calls window.attenzioneInside.{journey, training, masks,
// occlusion, embeddings}(root, answer, opts).
(function () {
  "use strict";

  const TOUCH = !!window.matchMedia && matchMedia("(hover: none)").matches && !matchMedia("(pointer: none)").matches;
  const TAP = TOUCH ? "Tap" : "Click";
  const WS = "\u2581";
  const FOLD = 8;       // values shown of a folded vector
  const FOLD_ROWS = 4;  // rows shown of a folded matrix
  const FOLD_COLS = 6;  // values shown of each folded row
  let uid = 0;          // ids unique across mounts (aria-controls, SVG patterns)

  // ---------------------------------------------------------------- helpers
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, v);
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
  // a raw SentencePiece piece as a reader sees it: a word start without its mark ("▁" alone
  // stays), a continuation of letters or digits with a leading "·"
  const label = (p) => (special(p) ? p : p.startsWith(WS) ? p.slice(1) || WS : ALNUM.test(p) ? "\u00b7" + p : p);
  // A token as the answer spells it (display tokens: "·" marks a continuation); ``plain``: the
  // answer gives pieces without their marks (the training view's fed / reference pieces).
  function chip(tok, plain, tag, attrs) {
    const node = el(tag || "span", attrs || {});
    node.classList.add("piece");
    if (special(tok)) node.classList.add("special");
    else if (!plain) node.classList.add(tok.startsWith("\u00b7") ? "cont" : "ws");
    if (tok === "<pad>") node.classList.add("pad");
    node.textContent = tok === "" ? "\u2423" : tok;
    return node;
  }
  const num = (x) => (x === null || x === undefined ? "−∞" : x < 0 ? "\u2212" + String(-x) : String(x));
  // a number to ``d`` significant digits, without the noise of float64's last digits
  const sig = (x, d) => (x === null || x === undefined ? "—" : num(Number(Number(x).toPrecision(d || 5))));
  // 1.7e-06, as Python writes it
  const sci = (x) => Number(x).toExponential(1).replace(/e([+-])(\d)$/, "e$10$2");
  function pct(p) {
    const x = 100 * p;
    if (x >= 0.01 || x === 0) return x.toFixed(2) + "%";
    return x.toExponential(1) + "%";
  }
  const checkText = (c) => (c === 0 ? "matches the model exactly" : `matches the model to ${sci(c)}`);
  function depth(v) {
    let d = 0;
    for (let x = v; Array.isArray(x); x = x[0]) d++;
    return d;
  }
  function nums(values, cls) {
    const box = el("span", { class: cls || "in-nums" });
    values.forEach((v, i) => box.appendChild(el("span", { class: "in-v" + (v === null ? " inf" : ""), title: `[${i}] ${num(v)}` }, num(v))));
    return box;
  }
  // "show all" / "fold": a button that re-draws ``box`` with ``draw(full)``
  function foldable(box, draw, more) {
    let full = false;
    const id = `in-fold-${++uid}`;
    const body = el("div", { id, class: "in-body" });
    const btn = el("button", { type: "button", class: "in-more", "aria-expanded": "false", "aria-controls": id });
    const redraw = () => {
      body.innerHTML = "";
      body.appendChild(draw(full));
      btn.textContent = full ? "fold" : `show all ${more}`;
      btn.setAttribute("aria-expanded", String(full));
    };
    btn.addEventListener("click", () => { full = !full; redraw(); });
    redraw();
    box.appendChild(body);
    box.appendChild(btn);
    return box;
  }
  // a vector: its first FOLD values, "show all" for the rest
  function vector(values, name) {
    const box = el("div", { class: "in-vec", "data-n": String(values.length) });
    if (name) box.appendChild(el("span", { class: "in-vname" }, name + " "));
    if (values.length <= FOLD + 2) { box.appendChild(nums(values)); return box; }
    return foldable(box, (full) => {
      const f = document.createDocumentFragment();
      f.appendChild(nums(full ? values : values.slice(0, FOLD)));
      if (!full) f.appendChild(el("span", { class: "hint" }, ` … ${values.length - FOLD} more`));
      return f;
    }, `${values.length}`);
  }
  // a matrix (rows of vectors, each with a label): FOLD_ROWS rows of FOLD_COLS values folded
  function matrix(rows, labels, selected) {
    const cols = rows[0] ? rows[0].length : 0;
    const box = el("div", { class: "in-mat", "data-rows": String(rows.length), "data-cols": String(cols) });
    const folded = rows.length > FOLD_ROWS || cols > FOLD_COLS + 2;
    const draw = (full) => {
      const scroll = el("div", { class: "in-scroll" });
      const table = el("table", { class: "in-matrix" });
      const n = full || !folded ? rows.length : Math.min(FOLD_ROWS, rows.length);
      for (let r = 0; r < n; r++) {
        const tr = el("tr", { class: selected && selected(r) ? "sel" : null });
        tr.appendChild(el("th", { scope: "row" }, labels[r]));
        const vals = full || !folded ? rows[r] : rows[r].slice(0, FOLD_COLS);
        const td = el("td");
        td.appendChild(nums(vals));
        if (vals.length < rows[r].length) td.appendChild(el("span", { class: "hint" }, " …"));
        tr.appendChild(td);
        table.appendChild(tr);
      }
      scroll.appendChild(table);
      if (n < rows.length) scroll.appendChild(el("p", { class: "hint in-rest" }, `… ${rows.length - n} more rows`));
      return scroll;
    };
    if (!folded) { box.appendChild(draw(true)); return box; }
    return foldable(box, draw, `${rows.length} × ${cols}`);
  }

  // ---------------------------------------------------------------- the journey
  const GROUP_TITLE = {
    input: "Input: the piece becomes a vector",
    output: "Output: from the vector to a piece",
  };
  function groupKey(s) {
    return s.layer !== undefined && s.layer !== null ? `layer ${s.layer} · ${s.block}` : s.where || "input";
  }
  function groupTitle(key, s) {
    if (GROUP_TITLE[key]) return GROUP_TITLE[key];
    if (s.layer !== undefined && s.layer !== null) return `Decoder layer ${s.layer} · ${s.block}`;
    return key;
  }

  // a per-key vector (scores, scaled, mask, softmax of one head): each key with its value
  function keyed(s, keys, token) {
    const self = s.block === "self-attention";
    const box = el("div", { class: "in-keyed", role: "list", "aria-label": `${s.name} for each key` });
    const allowed = s.allowed || null;
    const max = s.name === "softmax" ? Math.max(...s.values.map((v) => v || 0), 1e-12) : 0;
    s.values.forEach((v, j) => {
      const masked = v === null || (allowed && !allowed[j]);
      const cell = el("span", { class: "in-key" + (masked ? " masked" : "") + (self && j === token ? " self" : ""),
        role: "listitem", "data-j": String(j) });
      cell.appendChild(chip(keys[j] === undefined ? `#${j}` : keys[j]));
      cell.appendChild(el("span", { class: "in-v" + (v === null ? " inf" : "") }, num(v)));
      if (masked && s.name === "mask") cell.appendChild(el("small", { class: "in-tag" }, self ? "future" : "padding"));
      if (max) {
        const bar = el("span", { class: "in-kbar" });
        bar.style.width = `${(100 * (v || 0) / max).toFixed(1)}%`;
        cell.appendChild(bar);
      }
      box.appendChild(cell);
    });
    return box;
  }

  function outputBars(s, chosenId) {
    const box = el("div", { class: "in-bars", role: "list", "aria-label": "the most likely pieces" });
    const max = Math.max(...s.values, 1e-12);
    s.values.forEach((p, k) => {
      const row = el("div", { class: "in-bar" + (s.ids[k] === chosenId ? " chosen" : ""), role: "listitem",
        "data-piece": s.pieces[k], "data-p": String(p) });
      const name = el("span", { class: "in-bar-name" });
      name.appendChild(chip(s.pieces[k], true));
      if (s.ids[k] === chosenId) name.appendChild(el("span", { class: "badge chosen" }, "written"));
      row.appendChild(name);
      const track = el("span", { class: "pl-track" });
      const fill = el("span", { class: "pl-fill" });
      fill.style.width = `${(100 * p / max).toFixed(2)}%`;
      track.appendChild(fill);
      row.appendChild(track);
      row.appendChild(el("span", { class: "in-bar-p" }, pct(p)));
      box.appendChild(row);
    });
    return box;
  }

  function stepBody(s, ctx) {
    const box = el("div", { class: "in-step-body" });
    const add = (node) => box.appendChild(node);
    const line = (text) => add(el("p", { class: "in-extra" }, text));
    const per = s.head !== undefined && s.head !== null;
    if (s.name === "embedding" && s.id !== undefined) line(`piece ‘${s.piece}’, id ${s.id}`);
    if (s.name === "positional encoding") {
      line(`position ${s.position}: sines at the even dimensions, cosines at the odd ones`);
      if (s.wavelengths) add(vector(s.wavelengths, "wavelengths (2π · 10000^(2i/d), one a sin/cos pair):"));
    }
    if (per && ctx.keys && s.values.length === ctx.keys.length && depth(s.values) === 1 && s.name !== "weighted values") {
      if (s.name === "mask") {
        const masked = (s.masked_keys || []).length;
        line(masked ? (s.block === "self-attention"
          ? `${masked} keys are the future (after position ${ctx.token}): −∞, so the softmax gives them 0 — greyed and hatched below.`
          : `${masked} keys are padding: −∞, so the softmax gives them 0.`)
          : "No key is masked: every source token may be read.");
      }
      add(keyed(s, ctx.keys, ctx.token));
    } else if (s.where === "output" && s.name === "logits") {
      if (s.note) line(s.note);
      add(outputBarsTable(s));
    } else if (s.where === "output" && s.name === "softmax") {
      if (s.sum !== undefined) line(`Σ over the whole vocabulary = ${sig(s.sum, 6)}; the ${s.values.length} most likely:`);
      add(outputBars(s, ctx.chosenId));
    } else if (s.name === "chosen piece") {
      const p = el("p", { class: "in-chosen" });
      p.appendChild(el("b", {}, "writes "));
      p.appendChild(chip(s.piece, true));
      p.appendChild(document.createTextNode(` (id ${s.id}) · p = ${sig(s.probability, 4)} · rank ${s.rank}` +
        (s.most_likely !== undefined && s.most_likely !== s.piece ? ` · the most likely piece was ‘${s.most_likely}’` : "")));
      add(p);
      if (s.note) line(s.note);
    } else {
      const d = depth(s.values);
      if (d === 1) add(vector(s.values));
      else if (d === 2) {
        add(matrix(s.values, s.values.map((_, h) => `head ${h}`), (r) => ctx.head === "all" || r === Number(ctx.head)));
      } else if (d === 3) {
        const rows = [], labels = [];
        s.values.forEach((byHead, j) => byHead.forEach((v, h) => {
          rows.push(v);
          labels.push(`${(s.keys && s.keys[j]) || "#" + j} · head ${h}`);
        }));
        add(matrix(rows, labels));
      }
    }
    if (s.name === "activation" && s.note) {
      const p = el("p", { class: "in-fired" });
      const bar = el("span", { class: "in-fired-bar", role: "img", "aria-label": s.note });
      const fill = el("span");
      fill.style.width = `${(100 * s.fired / Math.max(1, s.units)).toFixed(1)}%`;
      bar.appendChild(fill);
      p.appendChild(bar);
      p.appendChild(el("b", {}, " " + s.note));
      box.insertBefore(p, box.firstChild);
    }
    if (s.name === "layer norm" && s.mean !== undefined) {
      line(`mean ${sig(s.mean)} · variance ${sig(s.variance)} · ε ${num(s.eps)}`);
      if (s.gamma) add(vector(s.gamma, "γ"));
      if (s.beta) add(vector(s.beta, "β"));
    }
    return box;
  }
  function outputBarsTable(s) {
    const scroll = el("div", { class: "in-scroll" });
    const t = el("table", { class: "in-logits" });
    const head = el("tr");
    for (const h of ["piece", "id", "logit"]) head.appendChild(el("th", { scope: "col" }, h));
    t.appendChild(head);
    s.values.forEach((v, k) => {
      const tr = el("tr");
      const td = el("td");
      td.appendChild(chip(s.pieces[k], true));
      tr.appendChild(td);
      tr.appendChild(el("td", {}, String(s.ids[k])));
      tr.appendChild(el("td", { class: "in-v" }, num(v)));
      t.appendChild(tr);
    });
    scroll.appendChild(t);
    return scroll;
  }

  // answer: POST /journey's; opts: {follow(i), reference (bool: teacher-forced on the shown
  // translation), head}
  function journey(root, J, opts) {
    opts = opts || {};
    root.innerHTML = "";
    root.classList.add("in-journey");
    const outs = [...J.tgt_tokens.slice(1), "<eos>"];  // position i predicts outs[i]
    const want = label(J.predicted_piece);
    const cfg = J.config || {};
    root.dataset.token = String(J.token);
    root.dataset.largest = String(J.largest_check);
    const h = el("h4", { class: "in-title", id: "jy-title" });
    h.append("How the model wrote ", chip(want));
    root.appendChild(h);
    const what = el("p", { class: "hint what" });
    what.textContent = `What am I looking at: decoder position ${J.token} is fed ‘${label(J.input_piece)}’ ` +
      `(${J.token === 0 ? "the start" : "the piece written before"}) and predicts the next piece, ‘${want}’. ` +
      `Below, in order, is everything the model computes for this position: the embedding and the positional encoding, ` +
      `then in each of the ${cfg.decoder_layers} decoder layers self-attention, cross-attention over the source and the ` +
      `feed-forward block, then the output layer and its softmax. Each step is recomputed from the model's weights and ` +
      `checked against the value the model itself computed; the keys and values come from the other positions and from the ` +
      `encoder's output, as the model computed them.` +
      (opts.reference ? " The translation shown was teacher-forced (it is not the one the model writes by itself)." : "");
    root.appendChild(what);
    const largest = el("p", { class: "in-largest" });
    largest.append(el("b", {}, "Every step " + checkText(J.largest_check) + (J.largest_check ? " or better" : "")),
      el("span", { class: "hint" }, " (the largest absolute difference over all steps; a check of “—” is a step the model keeps no separate value for)"));
    root.appendChild(largest);
    const conf = `d_model ${cfg.d_model} · ${cfg.heads} heads × d_head ${cfg.d_head}` +
      (cfg.heads * cfg.d_head !== cfg.d_model ? ` = ${cfg.heads * cfg.d_head} (≠ d_model: W^O projects it back)` : "") +
      ` · d_ff ${cfg.d_ff} · ${cfg.decoder_layers} decoder layers · ${cfg.norm}-norm · ${cfg.activation}`;
    root.appendChild(el("p", { class: "hint in-config" }, conf));
    // the pieces: follow another one
    const pieces = el("div", { class: "in-pieces", role: "group", "aria-label": "follow another piece of the translation" });
    pieces.appendChild(el("span", { class: "hint" }, "follow: "));
    outs.forEach((t, i) => {
      const b = chip(t, false, "button", { type: "button", "data-i": String(i), "aria-pressed": String(i === J.token),
        "aria-label": `position ${i}: how the model wrote ${t}` });
      if (i === J.token) b.classList.add("now");
      if (opts.follow) b.addEventListener("click", () => opts.follow(i));
      pieces.appendChild(b);
    });
    root.appendChild(pieces);
    // knobs: the head of the per-head steps; open / close every group
    const knobs = el("div", { class: "in-knobs" });
    const hl = el("label", { for: "jy-head" }, "head ");
    const sel = el("select", { id: "jy-head", "aria-label": "Head shown in the per-head steps" });
    for (let k = 0; k < (cfg.heads || 0); k++) sel.appendChild(el("option", { value: String(k) }, `head ${k}`));
    sel.appendChild(el("option", { value: "all" }, "every head"));
    const head = opts.head !== undefined && (opts.head === "all" || Number(opts.head) < cfg.heads) ? String(opts.head) : "0";
    sel.value = head;
    hl.appendChild(sel);
    knobs.appendChild(hl);
    const openAll = el("button", { type: "button", class: "in-btn", id: "jy-open-all" }, "Open every group");
    knobs.appendChild(openAll);
    root.appendChild(knobs);
    // the steps, grouped by layer and block
    const ctx = { keys: null, token: J.token, head, chosenId: null };
    const chosen = J.steps.find((s) => s.name === "chosen piece");
    if (chosen) ctx.chosenId = chosen.id;
    let group = null, key = null, count = 0, summary = null;
    const close = () => { if (summary) summary.appendChild(el("span", { class: "hint" }, ` · ${count} steps`)); };
    J.steps.forEach((s, k) => {
      const g = groupKey(s);
      if (g !== key) {
        close();
        key = g;
        count = 0;
        group = el("details", { class: "in-group", "data-group": g });
        if (g === "input" || g === "output") group.open = true;
        summary = el("summary", {}, groupTitle(g, s));
        group.appendChild(summary);
        root.appendChild(group);
      }
      count++;
      if (s.name === "key" && s.keys) ctx.keys = s.keys;
      const per = s.head !== undefined && s.head !== null;
      const step = el("div", { class: "in-step", "data-k": String(k), "data-name": s.name,
        "data-check": s.check === null || s.check === undefined ? "" : String(s.check) });
      if (per) step.dataset.head = String(s.head);
      if (per && head !== "all" && String(s.head) !== head) step.hidden = true;
      const top = el("div", { class: "in-step-head" });
      top.appendChild(el("b", { class: "in-name" }, s.name));
      if (per) top.appendChild(el("span", { class: "in-headno" }, `head ${s.head}`));
      top.appendChild(el("code", { class: "in-formula" }, s.formula));
      top.appendChild(el("span", { class: "in-shape", title: "shape" }, s.shape));
      top.appendChild(s.check === null || s.check === undefined
        ? el("span", { class: "in-check none", title: "the model computes this inside a fused step: no separate value to compare" }, "check —")
        : el("span", { class: "in-check" }, "✓ " + checkText(s.check)));
      step.appendChild(top);
      step.appendChild(stepBody(s, ctx));
      group.appendChild(step);
    });
    close();
    sel.addEventListener("change", () => {
      const v = sel.value;
      root.querySelectorAll(".in-step[data-head]").forEach((n) => { n.hidden = v !== "all" && n.dataset.head !== v; });
      root.querySelectorAll(".in-matrix tr.sel, .in-matrix tr").forEach((tr) => {
        const lab = tr.firstChild && tr.firstChild.textContent;
        if (/^head \d+$/.test(lab || "")) tr.classList.toggle("sel", v === "all" || lab === `head ${v}`);
      });
      root.dataset.head = v;
      if (opts.onHead) opts.onHead(v);
    });
    root.dataset.head = head;
    openAll.addEventListener("click", () => {
      const groups = [...root.querySelectorAll("details.in-group")];
      const open = !groups.every((d) => d.open);
      groups.forEach((d) => { d.open = open; });
      openAll.textContent = open ? "Close every group" : "Open every group";
    });
  }

  // ---------------------------------------------------------------- the training view
  function training(root, T) {
    root.innerHTML = "";
    root.classList.add("in-training");
    const what = el("p", { class: "hint what" });
    what.textContent = `What am I looking at: teacher forcing, as a training step does it. The decoder is fed ` +
      `<bos> and the reference's pieces, every position at once under the causal mask, and at each position the model ` +
      `gives a probability to the reference's next piece. A long bar is a piece the model expected; ≠ marks a position ` +
      `where greedy decoding would have written another piece.`;
    root.appendChild(what);
    const scroll = el("div", { class: "in-scroll" });
    const table = el("table", { class: "in-train", id: "train-table" });
    table.appendChild(el("caption", { class: "hint" }, `“${T.source}” → “${T.reference}”`));
    const hr = el("tr");
    for (const [text, title] of [["#", "position"], ["fed → reference", "the piece fed at this position, and the reference's piece it should predict"],
      ["p(reference)", "the model's probability of the reference piece"], ["−log p", "its negative log-probability"],
      ["loss", `the position's label-smoothed loss (ε = ${T.smoothing})`], ["greedy", "the piece greedy decoding would write here"]]) {
      hr.appendChild(el("th", { scope: "col", title }, text));
    }
    table.appendChild(el("thead")).appendChild(hr);
    const body = el("tbody");
    for (const p of T.positions) {
      const tr = el("tr", { class: "in-pos" + (p.differs ? " differs" : ""), "data-position": String(p.position),
        "data-p": String(p.probability), "data-nll": String(p.nll), "data-loss": String(p.loss), "data-differs": String(p.differs) });
      tr.appendChild(el("td", { class: "in-n" }, String(p.position)));
      const pair = el("td", { class: "in-pair" });
      pair.append(chip(p.fed, true), el("span", { class: "arrow", "aria-label": "then" }, " → "), chip(p.reference, true));
      tr.appendChild(pair);
      const pc = el("td", { class: "in-p" });
      const track = el("span", { class: "pl-track" });
      const fill = el("span", { class: "pl-fill" });
      fill.style.width = `${(100 * p.probability).toFixed(2)}%`;
      track.appendChild(fill);
      pc.append(track, el("span", { class: "in-pv" }, pct(p.probability)));
      tr.appendChild(pc);
      tr.appendChild(el("td", { class: "in-v" }, sig(p.nll, 4)));
      tr.appendChild(el("td", { class: "in-v" }, sig(p.loss, 4)));
      const g = el("td", { class: "in-g" });
      if (p.differs) {
        const mark = el("span", { class: "in-greedy-mark", "data-greedy": p.greedy });
        mark.append(el("b", { "aria-hidden": "true" }, "≠ "), el("span", { class: "sr" }, "greedy differs: "), chip(p.greedy, true),
          el("small", {}, " " + pct(p.greedy_probability)));
        g.appendChild(mark);
      } else {
        g.appendChild(el("span", { class: "hint", title: "greedy writes the reference's piece" }, "= same"));
      }
      tr.appendChild(g);
      body.appendChild(tr);
    }
    table.appendChild(body);
    scroll.appendChild(table);
    root.appendChild(scroll);
    const total = el("div", { class: "in-total", id: "train-total" });
    const loss = el("p", {});
    loss.append(el("b", {}, `Loss ${sig(T.loss, 5)} per token`),
      ` over ${T.tokens} tokens: the trainer's own label-smoothed cross-entropy, ε = ${T.smoothing}. Each position costs ` +
      `(1 − ε) · (−log p) + ε · (the mean −log p over the whole vocabulary), which is why a piece the model is sure of ` +
      `still costs more than its −log p.`);
    total.appendChild(loss);
    total.appendChild(el("p", {}, `Without smoothing, −log p is ${sig(T.nll, 5)} per token: perplexity ${sig(T.perplexity, 5)}. ` +
      `Greedy decoding would write another piece at ${T.greedy_differs} of the ${T.tokens} positions.`));
    total.appendChild(el("p", { class: "in-cached", id: "train-cached" },
      `✓ Step-by-step decoding with the K/V cache matches the full pass to ${sci(T.cached_check)}.`));
    root.appendChild(total);
  }

  // ---------------------------------------------------------------- the masks
  const MASK_CAPTION = {
    encoder: "Encoder self-attention (source × source), pairwise padding: query i may read key j only when both are real tokens.",
    decoder: "Decoder self-attention (target × target), causal ∧ padding: position i may read j only when j ≤ i and both are real.",
    cross: "Cross-attention (target × source): a real target query may read every real source key, never <pad>.",
  };
  function maskGrid(grid, rows, cols, kind, b, status) {
    const cell = 13;
    const longest = (toks) => Math.max(3, ...toks.map((t) => Math.min(10, t.length)));
    const left = 8 + 6.2 * longest(rows), top = 8 + 6.2 * longest(cols);
    const width = Math.ceil(left + cols.length * cell + 2), height = Math.ceil(top + rows.length * cell + 2);
    const id = `in-hatch-${++uid}`;
    const svg = svgEl("svg", { class: "in-mask", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "data-kind": kind, "data-sentence": String(b),
      "aria-label": `${kind} mask of sentence ${b + 1}: ${rows.length} queries × ${cols.length} keys; solid cells allowed, hatched cells masked` });
    const pat = svgEl("pattern", { id, width: 4, height: 4, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
    pat.appendChild(svgEl("rect", { width: 4, height: 4, fill: "#eceef0" }));
    pat.appendChild(svgEl("line", { x1: 0, y1: 0, x2: 0, y2: 4, stroke: "#a9b0b7", "stroke-width": 1.5 }));
    svg.appendChild(svgEl("defs")).appendChild(pat);
    const short = (t) => (t.length > 10 ? t.slice(0, 9) + "…" : t);
    cols.forEach((t, j) => svg.appendChild(svgEl("text", { class: t === "<pad>" ? "pad" : "",
      transform: `translate(${left + j * cell + cell / 2 + 3},${top - 4}) rotate(-90)` }, short(t))));
    rows.forEach((t, i) => {
      const y = top + i * cell;
      svg.appendChild(svgEl("text", { class: t === "<pad>" ? "pad" : "", x: left - 4, y: y + cell - 3, "text-anchor": "end" }, short(t)));
      grid[i].forEach((ok, j) => {
        const r = svgEl("rect", { class: "cell " + (ok ? "allowed" : "masked"), x: left + j * cell, y, width: cell - 1, height: cell - 1,
          fill: ok ? "#2f6fde" : `url(#${id})`, "data-i": String(i), "data-j": String(j), "data-allowed": ok ? "1" : "0" });
        r.appendChild(svgEl("title", {}, `query ${i} ‘${rows[i]}’ → key ${j} ‘${cols[j]}’: ${ok ? "allowed" : "masked"}`));
        svg.appendChild(r);
      });
    });
    svg.addEventListener("click", (e) => {
      const r = e.target.closest ? e.target.closest("rect.cell") : null;
      if (!r) return;
      const i = Number(r.dataset.i), j = Number(r.dataset.j);
      status.textContent = `${kind}, sentence ${b + 1}: query ${i} ‘${rows[i]}’ → key ${j} ‘${cols[j]}’ is ${r.dataset.allowed === "1" ? "allowed" : "masked"}.`;
    });
    return svg;
  }
  function masks(root, T) {
    root.innerHTML = "";
    root.classList.add("in-masks");
    const M = T.masks;
    root.appendChild(el("p", { class: "hint what" },
      `What am I looking at: the two sentences below went through the model as one padded batch, the shorter one filled ` +
      `with <pad> to the longer one's length. These are the masks the model applied (model/masks.py's tensors, not redrawn): ` +
      `rows are queries, columns keys; solid blue cells may attend, hatched grey cells may not. ${TAP} a cell to name it.`));
    const status = el("p", { class: "hint in-mask-status", role: "status" });
    M.sentences.forEach((sentence, b) => {
      const sec = el("div", { class: "in-mask-sentence", "data-sentence": String(b) });
      const h = el("p", { class: "in-sent" });
      const real = (toks) => toks.filter((t) => t !== "<pad>").length;
      h.append(el("b", {}, `Sentence ${b + 1}: `), `“${sentence}” → “${M.translations[b]}” `,
        el("span", { class: "hint" }, `(${real(M.src_tokens[b])} of ${M.src_tokens[b].length} source and ${real(M.tgt_tokens[b])} of ` +
          `${M.tgt_tokens[b].length} target tokens real)`));
      sec.appendChild(h);
      const figs = el("div", { class: "in-mask-row" });
      for (const [kind, rows, cols] of [["encoder", M.src_tokens[b], M.src_tokens[b]], ["decoder", M.tgt_tokens[b], M.tgt_tokens[b]],
        ["cross", M.tgt_tokens[b], M.src_tokens[b]]]) {
        const fig = el("figure", { class: "in-fig" });
        fig.appendChild(el("figcaption", {}, MASK_CAPTION[kind]));
        const sc = el("div", { class: "in-scroll" });
        sc.appendChild(maskGrid(M[kind][b], rows, cols, kind, b, status));
        fig.appendChild(sc);
        figs.appendChild(fig);
      }
      sec.appendChild(figs);
      root.appendChild(sec);
    });
    const legend = el("p", { class: "hint in-legend" });
    const sw = (cls) => el("span", { class: "in-sw " + cls, "aria-hidden": "true" });
    legend.append(sw("allowed"), " allowed (may attend) · ", sw("masked"), " masked (−∞ before the softmax) · ",
      chip("<pad>"), " padding");
    root.appendChild(legend);
    root.appendChild(status);
  }

  // ---------------------------------------------------------------- occlusion
  function grid(values, rows, cols, kind, fmt) {
    const scroll = el("div", { class: "in-scroll" });
    const t = el("table", { class: "in-grid", "data-kind": kind });
    const hr = el("tr");
    hr.appendChild(el("th", { scope: "col", class: "corner" }, "piece \\ word"));
    cols.forEach((w) => hr.appendChild(el("th", { scope: "col" }, w)));
    t.appendChild(hr);
    const max = Math.max(...values.flat().map((v) => Math.abs(v || 0)), 1e-12);
    values.forEach((row, i) => {
      const tr = el("tr");
      const th = el("th", { scope: "row" });
      th.appendChild(chip(rows[i]));
      tr.appendChild(th);
      let best = 0;
      row.forEach((v, j) => { if (v > row[best]) best = j; });
      row.forEach((v, j) => {
        const a = Math.min(1, Math.abs(v) / max);
        const td = el("td", { class: "in-cell" + (j === best ? " top" : ""), "data-i": String(i), "data-j": String(j), "data-v": String(v),
          title: `${rows[i]} ← ${cols[j]}: ${num(v)}` }, fmt(v));
        td.style.background = v >= 0 ? `rgba(255,140,0,${(0.85 * a).toFixed(3)})` : `rgba(47,111,222,${(0.85 * a).toFixed(3)})`;
        if (a > 0.6) td.classList.add("dark");
        tr.appendChild(td);
      });
      t.appendChild(tr);
    });
    scroll.appendChild(t);
    return scroll;
  }
  // opts: {head: "layer.head"}
  function occlusion(root, O, opts) {
    opts = opts || {};
    root.innerHTML = "";
    root.classList.add("in-occlusion");
    const rows = O.targets, cols = O.words;
    const heads = O.heads || [];
    const keyOf = (h) => `${h.layer}.${h.head}`;
    let current = heads.find((h) => keyOf(h) === opts.head) ||
      heads.reduce((a, b) => ((b.correlation ?? -2) > (a.correlation ?? -2) ? b : a), heads[0]);
    root.appendChild(el("p", { class: "hint what" },
      `What am I looking at: left, how much each source word matters to each target piece — the model reads the sentence ` +
      `again without the word, the same translation teacher-forced, and the cell is log p(piece) with the word − without it ` +
      `(orange: the piece needed the word; blue: it did better without). Right, where the chosen head's cross-attention ` +
      `went, summed over each word's pieces. The outlined cell is each row's largest.`));
    root.appendChild(el("p", { class: "in-lesson" },
      "What to take from it: a head whose grid looks like the importance grid (high top-1 agreement and correlation) " +
      "attends to the words the translation depends on, but many heads put their attention elsewhere — on punctuation, " +
      "the end of the sentence, neighbouring words — so a head's attention is evidence of where it read, not an alignment."));
    const knobs = el("div", { class: "in-knobs" });
    const lab = el("label", { for: "occ-head" }, "cross-attention ");
    const sel = el("select", { id: "occ-head", "aria-label": "Layer and head of the cross-attention shown" });
    heads.forEach((h) => sel.appendChild(el("option", { value: keyOf(h) }, `layer ${h.layer} head ${h.head}`)));
    lab.appendChild(sel);
    knobs.appendChild(lab);
    root.appendChild(knobs);
    const grids = el("div", { class: "in-occ-grids" });
    const left = el("figure", { class: "in-fig" });
    left.appendChild(el("figcaption", {}, "Importance: log p with the word − without it"));
    left.appendChild(grid(O.importance, rows, cols, "importance", (v) => num(Number(v.toFixed(2)))));
    grids.appendChild(left);
    const right = el("figure", { class: "in-fig", id: "occ-attention" });
    grids.appendChild(right);
    root.appendChild(grids);
    const table = el("table", { class: "in-heads", id: "occ-heads" });
    table.appendChild(el("caption", { class: "hint" }, "Every head: top-1 agreement (the share of pieces whose most-attended word is the one " +
      "whose removal costs them most) and correlation (Pearson's r across the words, averaged over the pieces)."));
    const order = { key: "correlation", dir: -1 };
    const COLS = [["head", "layer · head"], ["top1", "top-1 agreement"], ["correlation", "correlation"]];
    const hr = el("tr");
    const ths = {};
    for (const [key, text] of COLS) {
      const th = el("th", { scope: "col" });
      const b = el("button", { type: "button", class: "in-sort", "data-key": key }, text);
      b.addEventListener("click", () => {
        order.dir = order.key === key ? -order.dir : key === "head" ? 1 : -1;
        order.key = key;
        drawHeads();
      });
      th.appendChild(b);
      ths[key] = th;
      hr.appendChild(th);
    }
    table.appendChild(el("thead")).appendChild(hr);
    const body = el("tbody");
    table.appendChild(body);
    const sc = el("div", { class: "in-scroll" });
    sc.appendChild(table);
    root.appendChild(sc);
    function drawAttention() {
      right.innerHTML = "";
      right.appendChild(el("figcaption", {}, `Cross-attention of layer ${current.layer} head ${current.head}, summed over each word's pieces ` +
        `(top-1 ${current.top1 === null ? "—" : pct(current.top1)}, r ${sig(current.correlation, 3)})`));
      right.appendChild(grid(current.attention, rows, cols, "attention", (v) => v.toFixed(2)));
      sel.value = keyOf(current);
      root.dataset.head = keyOf(current);
      body.querySelectorAll("tr").forEach((tr) => tr.classList.toggle("sel", tr.dataset.head === keyOf(current)));
      body.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.head === keyOf(current))));
    }
    function drawHeads() {
      const val = (h) => (order.key === "head" ? h.layer * 1000 + h.head : h[order.key] ?? -Infinity);
      const sorted = [...heads].sort((a, b) => order.dir * (val(a) - val(b)));
      body.innerHTML = "";
      for (const h of sorted) {
        const tr = el("tr", { "data-head": keyOf(h), "data-top1": String(h.top1), "data-correlation": String(h.correlation) });
        const td = el("td");
        const b = el("button", { type: "button", class: "in-btn small", "data-head": keyOf(h), "aria-label": `show layer ${h.layer} head ${h.head}` },
          `layer ${h.layer} · head ${h.head}`);
        b.addEventListener("click", () => { current = h; drawAttention(); });
        td.appendChild(b);
        tr.appendChild(td);
        tr.appendChild(el("td", { class: "in-v" }, h.top1 === null ? "—" : pct(h.top1)));
        tr.appendChild(el("td", { class: "in-v" }, sig(h.correlation, 3)));
        body.appendChild(tr);
      }
      for (const [key] of COLS) ths[key].setAttribute("aria-sort", key === order.key ? (order.dir > 0 ? "ascending" : "descending") : "none");
      if (current) drawAttention();
    }
    sel.addEventListener("change", () => { current = heads.find((h) => keyOf(h) === sel.value) || current; drawAttention(); });
    drawHeads();
  }

  // ---------------------------------------------------------------- the embedding space
  // answer: POST /embeddings's (EmbeddingSpace.nearest / analogy / similarity, .to_dict());
  // opts: {explore(piece)}: a word-start piece listed is a button that asks for its own
  // neighbours. The cosines drawn are the answer's (a bar's length is its cosine, 0 to 1).
  // a cosine to 4 decimals, for display (the answer's own number is in data-cosine)
  const fix4 = (x) => (x < 0 ? "\u2212" + (-x).toFixed(4) : x.toFixed(4));
  function queryLine(q) {
    const p = el("p", { class: "in-emb-query", "data-text": q.text });
    p.append(el("b", {}, q.text), q.mean ? " = the mean of the rows of " : " = the row of ");
    q.pieces.forEach((x, i) => {
      if (i) p.append(" + ");
      p.append(chip(x.piece, true), el("small", { class: "hint" }, ` id ${x.id}`));
    });
    return p;
  }
  function embeddings(root, E, opts) {
    opts = opts || {};
    root.innerHTML = "";
    root.classList.add("in-embeddings");
    root.dataset.kind = E.kind;
    const t = E.table;
    root.appendChild(el("p", { class: "hint in-emb-table" },
      `The ${t.side} table${t.language ? ` (${t.language})` : ""}: ${t.rows} rows × ${t.width}, ${t.dtype}; ${t.about}.`));
    E.queries.forEach((q) => root.appendChild(queryLine(q)));
    if (E.kind === "similarity") {
      const [a, b] = E.queries;
      root.appendChild(el("p", { class: "in-emb-cos", "data-cosine": String(E.cosine) },
        `cos(${a.text}, ${b.text}) = ${fix4(E.cosine)}`));
      return;
    }
    const [a, b, c] = E.queries;
    const title = E.kind === "analogy" ? `${a.text} − ${b.text} + ${c.text} ≈` : `The ${E.neighbours.length} pieces nearest to ${a.text}`;
    root.appendChild(el("h4", { class: "in-title" }, title));
    const list = el("ol", { class: "in-emb-list", "aria-label": title });
    E.neighbours.forEach((n, r) => {
      const li = el("li", { class: "in-emb-row", "data-piece": n.piece, "data-id": String(n.id), "data-cosine": String(n.cosine) });
      li.appendChild(el("span", { class: "in-n" }, `${r + 1}.`));
      const name = el("span", { class: "in-bar-name" });
      if (opts.explore && n.piece.startsWith(WS) && n.piece.length > 1) {
        const btn = chip(n.piece, true, "button", { type: "button", "aria-label": `the pieces nearest to ${n.piece}` });
        btn.addEventListener("click", () => opts.explore(n.piece));
        name.appendChild(btn);
      } else name.appendChild(chip(n.piece, true));
      name.appendChild(el("small", { class: "hint in-emb-id" }, ` ${n.id}`));
      li.appendChild(name);
      const track = el("span", { class: "pl-track", role: "img", "aria-label": `cosine ${fix4(n.cosine)}` });
      const fill = el("span", { class: "pl-fill" });
      fill.style.width = `${(100 * Math.max(0, Math.min(1, n.cosine))).toFixed(1)}%`;
      track.appendChild(fill);
      li.appendChild(track);
      li.appendChild(el("span", { class: "in-bar-p" }, fix4(n.cosine)));
      list.appendChild(li);
    });
    root.appendChild(list);
    root.appendChild(el("p", { class: "hint in-emb-formula" },
      `${E.formula}; not listed: ${E.excluded.join(", ")} (the query's own pieces) and the special pieces.`));
  }

  window.attenzioneInside = { journey, training, masks, occlusion, embeddings, label };
})();
