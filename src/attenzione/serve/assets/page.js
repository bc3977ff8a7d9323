// attenzione serve: translate as you type, show the alternatives, the confidence and the
// attention of each sentence. Talks only to the server that served it (same origin).
//
// Two kinds of request, both POST /translate:
//  - the text, without attention: the answer stays small and quick however long the text;
//  - the one sentence the viewer shows, alone, with every map (attention_all), when it is
//    shown. The service cuts a text into sentences and translates each on its own, with the
//    same decoding (same beam, same n-best), so the sentence alone gets the same translation
//    it got inside the text. Its maps are kept per sentence text: selecting it again, or
//    typing on after it, asks nothing.
// A third, POST /trace, only when asked: the decoding of the shown sentence step by step, for
// the player (viz/assets/player.js), which calls back here to re-translate it (a forced
// prefix, parts switched off) and to explain one head.
// Three more, each when asked, for the panels "inside the model" (viz/assets/inside.js draws
// them): POST /journey (a tap on a piece of the translation: that decoder position through
// the whole model), /training (a reference teacher-forced, and the masks of a padded batch)
// and /occlusion (each word removed, beside every head's cross-attention). They follow the
// translation the viewer shows: when the player made another one (another word, parts
// switched off, another search), it is sent as the `reference` to teacher-force. One more
// needs no sentence: POST /embeddings, a word's nearest pieces (or A − B + C) in the model's
// own embedding table.
// Whatever is on screen belongs to the text in the box: a change of the text (or of the key)
// clears the answer at once and aborts the requests made for the old text; an answer that
// still arrives for an older text is dropped (sequence numbers), never drawn.
(function () {
  "use strict";

  const SETTINGS = JSON.parse(document.getElementById("page-settings").textContent);
  const $ = (sel) => document.querySelector(sel);
  const input = $("#input");
  const LIMIT = Number(SETTINGS.charLimit);  // -1: no limit
  const ALTERNATIVES = 3;
  const CACHE_SIZE = 64;  // sentences whose maps are kept (~100 kB each)
  let seq = 0;          // the text now in the box; answers for an older one are dropped
  let timer = null;
  let pending = null;   // AbortController of the text's request
  let answer = null;    // the answer for the text now in the box
  let selected = 0;     // the sentence shown in the viewer
  let attSeq = 0;       // the viewer's latest request; older ones are dropped
  let attPending = null;
  const maps = new Map();  // sentence text → its attention payload (null: none to show)
  let traceSeq = 0;     // the player's latest request; older ones are dropped
  let tracePending = null;
  let shownTrace = null;  // the trace the player shows
  const TOUCH = !!window.matchMedia && matchMedia("(hover: none)").matches && !matchMedia("(pointer: none)").matches;
  if (TOUCH) document.querySelectorAll(".hover-word").forEach((n) => { n.textContent = "Tap"; });
  if (TOUCH) document.querySelectorAll(".click-word").forEach((n) => { n.textContent = "tap"; });
  if (TOUCH) document.querySelectorAll(".click-word-cap").forEach((n) => { n.textContent = "Tap"; });

  if (SETTINGS.keyRequired) document.body.classList.add("key-required");

  // ---------------------------------------------------------------- the direction
  // Every pair the server translates (one per model); the swap button turns the direction
  // round when the server has the reverse pair, and moves the translation into the box.
  const DIRECTIONS = (SETTINGS.directions && SETTINGS.directions.length) ? SETTINGS.directions : [SETTINGS.language];
  let direction = DIRECTIONS[0];
  const reverseOf = (d) => DIRECTIONS.find((o) => o.source.code === d.target.code && o.target.code === d.source.code);
  function showDirection() {
    const { source, target } = direction;
    $("#lang-pair").textContent = `${source.name} → ${target.name}`;
    $("#source-name").textContent = source.name;
    $("#target-name").textContent = target.name;
    input.placeholder = `Type or paste ${source.name}…`;
    input.setAttribute("lang", source.code);
    $("#output").setAttribute("lang", target.code);
    document.querySelectorAll(".source-lang").forEach((n) => { n.textContent = source.name; });
    document.querySelectorAll(".target-lang").forEach((n) => { n.textContent = target.name; });
    $("#swap").hidden = !reverseOf(direction);
    // the embedding space's two tables, named after the direction's languages
    const sides = $("#emb-side").options;
    sides[0].textContent = `source (${source.name})`;
    sides[1].textContent = `target (${target.name})`;
  }
  function swap() {
    const other = reverseOf(direction);
    if (!other) return;
    const translated = answer ? answer.translatedText : "";
    direction = other;
    maps.clear();  // the maps of the other direction's sentences
    clearEmbeddings();  // the other direction's model has its own table
    showDirection();
    if (translated) input.value = translated;
    changed();
    input.focus();
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  // Mean log-prob per token → the geometric-mean probability of the tokens, as a percentage.
  const percent = (logp) => Math.round(100 * Math.exp(logp));
  function confidence(logp) {
    const box = el("span", { class: "conf", title: `mean log-probability per token ${logp.toFixed(3)}` });
    const bar = el("span", { class: "bar" });
    const fill = el("span");
    fill.style.width = `${percent(logp)}%`;
    bar.appendChild(fill);
    box.appendChild(bar);
    box.appendChild(el("span", { class: "pct" }, `${percent(logp)}%`));
    return box;
  }

  // ---------------------------------------------------------------- state shown
  // body[data-state]: idle (empty box) · waiting (typing) · translating · done · error;
  // body[data-attention]: "" · loading · done · none (nothing to show) · error.
  function setState(name) {
    document.body.dataset.state = name;
    const busy = name === "waiting" || name === "translating";
    $("#output").setAttribute("aria-busy", String(busy));
    $("#busy").textContent = busy ? "Translating…" : "";
    $("#swap").disabled = busy;  // the box's text has no translation to swap in yet
    $("#busy").classList.toggle("on", busy);
  }
  function setAttention(name, note) {
    document.body.dataset.attention = name;
    $("#viewer-section").setAttribute("aria-busy", String(name === "loading"));
    $("#attention-note").textContent = note || "";
    $("#attention-note").classList.toggle("loading", name === "loading");
  }
  function counter() {
    const n = input.value.length;  // UTF-16 units, as maxlength counts: never above the server's count
    $("#counter").textContent = LIMIT > 0 ? `${n} / ${LIMIT}` : `${n}`;
    $("#counter").classList.toggle("full", LIMIT > 0 && n >= LIMIT);
  }

  // Everything drawn for a text: the translation, its alternatives, sentences and attention.
  function clearAnswer() {
    answer = null;
    $("#output").textContent = "";
    $("#meta-conf").innerHTML = "";
    $("#alternatives").innerHTML = "";
    $("#alternatives-label").hidden = true;
    $("#sentences").innerHTML = "";
    clearViewer();
  }
  function clearViewer() {
    attSeq++;
    if (attPending) attPending.abort();
    attPending = null;
    clearTrace();
    clearInside();
    $("#viewer-section").hidden = true;
    setAttention("");
  }
  function fail(message) {
    clearAnswer();
    $("#error").textContent = message;
    setState("error");
  }

  // ---------------------------------------------------------------- requests
  // POST /translate (or ``route``); resolves to {ok, status, data}, rejects on a network
  // error or abort.
  async function post(fields, signal, route) {
    const body = {
      source: direction.source.code, target: direction.target.code,
      format: "text", ...fields,
    };
    const key = $("#api-key").value.trim();
    if (key) body.api_key = key;
    const res = await fetch(route || "translate", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal,
    });
    let data;
    try { data = await res.json(); } catch (e) { data = {}; }
    return { ok: res.ok, status: res.status, data: data || {} };
  }
  const message = (r) => (r.data && r.data.error) || `The server answered ${r.status}.`;

  // The text changed (or the key): nothing on screen belongs to it any more.
  function changed() {
    seq++;
    clearTimeout(timer);
    if (pending) pending.abort();
    pending = null;
    clearAnswer();
    $("#error").textContent = "";
    counter();
    if (!input.value.trim()) { setState("idle"); return; }
    setState("waiting");
    timer = setTimeout(translate, Math.max(150, SETTINGS.frontendTimeout || 500));
  }

  async function translate() {
    const mine = seq;
    const ctrl = new AbortController();
    pending = ctrl;
    setState("translating");
    let r;
    try {
      r = await post({ q: input.value, alternatives: ALTERNATIVES, scores: true }, ctrl.signal);
    } catch (e) {
      if (mine === seq) fail(`The server did not answer: ${e.message || e}`);
      return;
    }
    if (mine !== seq) return;  // the text changed meanwhile
    pending = null;
    if (!r.ok) { fail(message(r)); return; }
    answer = r.data;
    show();
    setState("done");
    select(0);
  }

  function show() {
    $("#output").textContent = answer.translatedText;
    const scores = answer.scores;
    const meta = $("#meta-conf");
    meta.innerHTML = "";
    meta.appendChild(el("span", {}, "confidence "));
    meta.appendChild(confidence(scores.confidence));
    const alts = $("#alternatives");
    alts.innerHTML = "";
    (answer.alternatives || []).forEach((alt, i) => {
      const li = el("li", {}, alt + " ");
      if (scores.alternatives[i] !== undefined) li.appendChild(confidence(scores.alternatives[i]));
      alts.appendChild(li);
    });
    $("#alternatives-label").hidden = !(answer.alternatives || []).length;
    const table = $("#sentences");
    table.innerHTML = "";
    scores.sentences.forEach((s, i) => {
      const tr = el("tr", { "data-i": i, tabindex: "0", "aria-selected": "false" });
      tr.appendChild(el("td", {}, s.source));
      tr.appendChild(el("td", {}, s.translation));
      const td = el("td");
      td.appendChild(confidence(s.confidence));
      tr.appendChild(td);
      tr.addEventListener("click", () => select(i));
      tr.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(i); }
      });
      table.appendChild(tr);
    });
  }

  // ---------------------------------------------------------------- the viewer
  async function select(i) {
    if (!answer) return;
    selected = i;
    document.querySelectorAll("#sentences tr").forEach((tr, n) => {
      tr.classList.toggle("on", n === i);
      tr.setAttribute("aria-selected", String(n === i));
    });
    const sentence = answer.scores.sentences[i];
    clearViewer();
    if (!sentence) return;
    if (maps.has(sentence.source)) { draw(maps.get(sentence.source)); return; }
    const mine = attSeq;
    const ctrl = new AbortController();
    attPending = ctrl;
    setAttention("loading", `Loading the attention of sentence ${i + 1}…`);
    let r;
    try {
      // The same decoding as the text's request (beam and n-best), so the same translation.
      r = await post({ q: sentence.source, alternatives: ALTERNATIVES, attention_all: true }, ctrl.signal);
    } catch (e) {
      if (mine === attSeq) setAttention("error", `The server did not answer: ${e.message || e}`);
      return;
    }
    if (mine !== attSeq) return;  // another sentence, or another text, was chosen meanwhile
    attPending = null;
    if (!r.ok) { setAttention("error", `No attention: ${message(r)}`); return; }
    const att = (r.data.attention || [])[0] || null;
    if (maps.size >= CACHE_SIZE) maps.delete(maps.keys().next().value);  // the oldest
    maps.set(sentence.source, att);
    draw(att);
  }

  function draw(att) {
    if (!att || !att.maps) {
      setAttention("none", "This sentence has no attention to show (blank, or too long to show).");
      return;
    }
    $("#viewer-section").hidden = false;
    window.attenzioneViewer.mount(att.maps, { lastLayer: true, explainHint: EXPLAIN_HINT });
    baseTranslation = shownTranslation = att.maps.translation;
    $("#inside").hidden = false;
    insideCode();
    // a link to punctuation (or the end) is where heads rest, not an alignment: say so
    const punct = (w) => /^[\p{P}\p{S}]+$/u.test(w) || w === "<eos>";
    const odd = [];
    const pairs = att.alignment.pairs.map(([s, t]) => {
      const sw = att.alignment.source_words[s], tw = att.alignment.target_words[t];
      if (punct(sw) && !punct(tw)) { odd.push(`${tw}→${sw}`); return `${tw}→${sw} ⚠`; }
      return `${tw}→${sw}`;
    });
    $("#alignment").textContent = pairs.join("  ·  ");
    $("#alignment-caution").textContent = odd.length
      ? `Caution: ${odd.join(", ")} links a word to punctuation, where attention often rests when no word is needed; read it as “no clear source word”.`
      : "";
    setAttention("done");
  }

  // ---------------------------------------------------------------- the decoding player
  // POST /trace for the sentence shown: the steps, the top pieces, the beam, the maps. The
  // player asks again through `retranslate` (another word: a forced prefix; heads off:
  // ablate), and shows the new translation beside the one before.
  function clearTrace() {
    traceSeq++;
    if (tracePending) tracePending.abort();
    tracePending = null;
    shownTrace = null;
    const player = $("#player");
    if (player) { player.hidden = true; player.innerHTML = ""; }
    $("#trace-note").textContent = "";
    $("#trace-note").classList.remove("loading");
    document.body.dataset.trace = "";
  }
  function traceNote(name, text) {
    document.body.dataset.trace = name;
    $("#trace-note").textContent = text || "";
    $("#trace-note").classList.toggle("loading", name === "loading");
  }
  async function trace(fields, why) {
    if (!answer) return;
    const sentence = answer.scores.sentences[selected];
    if (!sentence) return;
    const mine = ++traceSeq;
    if (tracePending) tracePending.abort();
    const ctrl = new AbortController();
    tracePending = ctrl;
    const body = { q: sentence.source, top_k: 10, ...fields };
    const beam = $("#trace-beam").value;
    if (beam) body.beam = Number(beam);
    traceNote("loading", fields.explain ? "Asking for the head's arithmetic…" : why ? `Re-translating ${why}…` : "Decoding the sentence step by step…");
    let r;
    try {
      r = await post(body, ctrl.signal, "trace");
    } catch (e) {
      if (mine === traceSeq) traceNote("error", `The server did not answer: ${e.message || e}`);
      return;
    }
    if (mine !== traceSeq) return;  // another request, sentence or text meanwhile
    tracePending = null;
    if (!r.ok) { traceNote("error", message(r)); return; }
    const before = why && shownTrace ? { translation: shownTrace.translation } : null;
    shownTrace = r.data;
    if (r.data.attention) {
      // the viewer above shows the attention of what the player shows (another search,
      // another word or heads off make another translation)
      const data = { ...r.data.attention };
      if (r.data.explain) data.explain = r.data.explain;
      window.attenzioneViewer.mount(data, { lastLayer: true, explainHint: EXPLAIN_HINT });
      if (r.data.translation !== shownTranslation) {
        // the pieces tapped now are the new translation's: the old journey and occlusion go
        shownTranslation = r.data.translation;
        panels.journey.clear();
        panels.occlusion.clear();
      }
    }
    window.attenzionePlayer.mount(r.data, { live: { retranslate: trace }, before, why });
    traceNote("done", r.data.explain ? `Head ${r.data.explain.head} of ${r.data.explain.kind} layer ${r.data.explain.layer}: its arithmetic is below the attention.` : "");
  }
  const EXPLAIN_HINT = "Choose a kind, layer and head above, then “Explain the selected head” to see its arithmetic for every token.";
  function explainSelected() {
    const [kind, layer, head] = (document.body.dataset.selection || "cross/0/avg").split("/");
    trace({ explain: true, explain_kind: kind, explain_layer: Number(layer), explain_head: head === "avg" ? 0 : Number(head) });
  }
  $("#trace-load").addEventListener("click", () => trace({}));
  // a target token clicked (or tapped) before the decoding is loaded: load it, then show
  // that step's alternatives (once loaded, the player itself answers the click)
  document.addEventListener("attenzione:target", async (e) => {
    if (shownTrace || tracePending || !answer) return;
    await trace({});
    if (shownTrace) window.attenzionePlayer.open(e.detail.index);
  });
  $("#explain-load").addEventListener("click", explainSelected);

  // ---------------------------------------------------------------- inside the model
  // One panel a route: its request (the latest wins, older answers are dropped), its status
  // line, its error line (a 400's one line, as the server wrote it) and body[data-<name>]:
  // "" · loading · done · error.
  // The panels' code (viz/assets/inside.js and .css) is fetched the first time the panels
  // are shown, not with the page: most visits translate and never open them.
  let insideLoading = null;
  function insideCode() {
    if (window.attenzioneInside) return Promise.resolve();
    if (!insideLoading) {
      insideLoading = new Promise((resolve, reject) => {
        const css = document.createElement("link");
        css.rel = "stylesheet";
        css.href = "assets/inside.css";
        document.head.appendChild(css);
        const js = document.createElement("script");
        js.src = "assets/inside.js";
        js.onload = () => resolve();
        js.onerror = () => {
          insideLoading = null;  // asked again, it tries again
          js.remove();
          reject(new Error("The page could not load the panels' code (assets/inside.js): reload the page."));
        };
        document.head.appendChild(js);
      });
    }
    return insideLoading;
  }
  let baseTranslation = null;   // the translation of the sentence shown, as the server made it
  let shownTranslation = null;  // the one the viewer shows now (the player may have made another)
  // opts.key: the body's data- attribute (default: name); opts.body(fields): what is posted
  // (default: the selected sentence as q, with fields; none yet: nothing is asked)
  function panel(name, route, boxId, draw, opts = {}) {
    let mine = 0, ctrl = null;
    const note = $(`#${name}-note`), error = $(`#${name}-error`), box = $(`#${boxId}`);
    const key = opts.key || name;
    const body = opts.body || ((fields) => {
      const sentence = answer && answer.scores.sentences[selected];
      return sentence ? { q: sentence.source, ...fields } : null;
    });
    const state = (v, text) => {
      document.body.dataset[key] = v;
      if (note) { note.textContent = text || ""; note.classList.toggle("loading", v === "loading"); }
    };
    const clear = () => {
      mine++;
      if (ctrl) ctrl.abort();
      ctrl = null;
      box.innerHTML = "";
      error.textContent = "";
      state("");
    };
    async function ask(fields, busy, after) {
      const sent = body(fields);
      if (!sent) return;
      const me = ++mine;
      if (ctrl) ctrl.abort();
      ctrl = new AbortController();
      error.textContent = "";
      state("loading", busy);
      let r;
      try {
        r = await post(sent, ctrl.signal, route);
      } catch (e) {
        if (me === mine) { state("error"); error.textContent = `The server did not answer: ${e.message || e}`; }
        return;
      }
      if (me !== mine) return;  // asked again, or the sentence or the text changed meanwhile
      ctrl = null;
      if (!r.ok) { box.innerHTML = ""; state("error"); error.textContent = message(r); return; }
      try {
        await insideCode();
      } catch (e) {
        if (me === mine) { state("error"); error.textContent = e.message; }
        return;
      }
      if (me !== mine) return;
      draw(r.data, fields);
      state("done");
      if (after) after(r.data);
    }
    return { ask, clear };
  }
  // the shown translation, when it is not the server's own: teacher-forced
  const followShown = () => (shownTranslation && shownTranslation !== baseTranslation ? { reference: shownTranslation } : {});
  let journeyHead = "0";
  const panels = {
    journey: panel("journey", "journey", "journey", (data, fields) => {
      window.attenzioneInside.journey($("#journey"), data, {
        follow: (i) => askJourney(i, false), reference: !!fields.reference, head: journeyHead,
        onHead: (h) => { journeyHead = h; },
      });
      $("#journey-back").hidden = false;
    }),
    training: panel("training", "training", "training-view", (data) => {
      window.attenzioneInside.training($("#training-view"), data);
      window.attenzioneInside.masks($("#masks"), data);
    }),
    occlusion: panel("occlusion", "occlusion", "occlusion", (data) => {
      window.attenzioneInside.occlusion($("#occlusion"), data, { head: occlusionHead() });
    }),
  };
  const occlusionHead = () => { const b = $("#occlusion"); return b && b.dataset.head; };
  function clearInside() {
    for (const p of Object.values(panels)) p.clear();
    $("#masks").innerHTML = "";
    $("#journey-back").hidden = true;
    $("#inside").hidden = true;
    baseTranslation = shownTranslation = null;
  }
  function askJourney(i, scroll) {
    const section = $("#journey-section");
    panels.journey.ask({ token: i, ...followShown() }, `Following piece ${i} through the model…`,
      () => { if (scroll && section.scrollIntoView) section.scrollIntoView({ block: "start" }); });
  }
  // a piece of the translation tapped (or Enter on it) in the viewer: its journey
  document.addEventListener("attenzione:target", (e) => {
    if (!answer || $("#inside").hidden) return;
    askJourney(e.detail.index, true);
  });
  $("#training-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const fields = { reference: $("#reference").value };
    const other = $("#other").value.trim();
    if (other) fields.other = other;
    panels.training.ask(fields, "Teacher-forcing the reference…");
  });
  $("#masks-form").addEventListener("submit", (e) => {
    e.preventDefault();
    $("#training-form").requestSubmit ? $("#training-form").requestSubmit() : $("#training-form").dispatchEvent(new Event("submit"));
  });
  $("#occlusion-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const fields = followShown();
    const words = $("#occlusion-words").value.trim();
    if (words) fields.words = words;
    panels.occlusion.ask(fields, "Removing each word in turn and teacher-forcing the translation again…");
  });

  // ---------------------------------------------------------------- the embedding space
  // POST /embeddings: a word's nearest pieces, and A − B + C, each in its own box, in the
  // table (source or target) of the direction's model. They need no sentence: what they show
  // stays while the text changes and goes when the direction does (another model, another
  // table). body[data-emb-nearest], body[data-emb-analogy]: "" · loading · done · error.
  function embPanel(name) {
    return panel(`emb-${name}`, "embeddings", `emb-${name}`,
      (data) => window.attenzioneInside.embeddings($(`#emb-${name}`), data, { explore: nearestOf }),
      { key: `emb${name[0].toUpperCase()}${name.slice(1)}`,
        body: (fields) => ({ side: $("#emb-side").value, k: 10, ...fields }) });
  }
  const embPanels = { nearest: embPanel("nearest"), analogy: embPanel("analogy") };
  function clearEmbeddings() {
    for (const p of Object.values(embPanels)) p.clear();
  }
  function nearestOf(word) {
    $("#emb-word").value = word;
    embPanels.nearest.ask({ word }, `Reading the rows nearest to ${word}…`);
  }
  $("#emb-nearest-form").addEventListener("submit", (e) => {
    e.preventDefault();
    nearestOf($("#emb-word").value.trim());
  });
  $("#emb-analogy-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const analogy = ["#emb-a", "#emb-b", "#emb-c"].map((id) => $(id).value.trim());
    embPanels.analogy.ask({ analogy }, `Reading the rows nearest to ${analogy[0]} − ${analogy[1]} + ${analogy[2]}…`);
  });
  // another table: the answers shown were read in the other one
  $("#emb-side").addEventListener("change", clearEmbeddings);

  // ---------------------------------------------------------------- a file
  // POST /translate_file: the chosen file as multipart (file, source, target and the key
  // field's api_key, as the text's requests send it); the answer's translatedFileUrl becomes
  // a download link named after the file. Choosing another file clears the old link or error
  // and drops the answer still on its way for the old one (as typing does for the text).
  // section[data-state]: idle (no file) · ready · busy · done · error.
  const fileInput = $("#file-input");
  let fileSeq = 0;
  let filePending = null;

  function fileState(name, text) {
    const section = $("#file-translation");
    section.dataset.state = name;
    section.setAttribute("aria-busy", String(name === "busy"));
    const status = $("#file-status");
    status.textContent = text || "";
    status.classList.toggle("busy", name === "busy");
    status.classList.toggle("error", name === "error");
    $("#file-translate").disabled = name === "busy" || !fileInput.files.length;
  }
  function fileChosen() {
    fileSeq++;
    if (filePending) filePending.abort();
    filePending = null;
    fileState(fileInput.files.length ? "ready" : "idle");
  }
  // The link goes to this server, relative to the page, as every request of the page does:
  // behind a proxy the address the server sees may not be the one the browser used.
  function downloadHref(url) {
    const at = url.lastIndexOf("/download_file/");
    return at < 0 ? url : url.slice(at + 1);
  }

  async function translateFile(event) {
    event.preventDefault();
    const file = fileInput.files[0];
    if (!file) return;
    const mine = ++fileSeq;
    const ctrl = new AbortController();
    if (filePending) filePending.abort();
    filePending = ctrl;
    const sent = direction;  // a swap while the file is on its way does not relabel it
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("source", sent.source.code);
    form.append("target", sent.target.code);
    const key = $("#api-key").value.trim();
    if (key) form.append("api_key", key);
    fileState("busy", `Translating ${file.name}…`);
    let r;
    try {
      const res = await fetch("translate_file", { method: "POST", body: form, signal: ctrl.signal });
      let data;
      try { data = await res.json(); } catch (e) { data = {}; }
      r = { ok: res.ok, status: res.status, data: data || {} };
    } catch (e) {
      if (mine === fileSeq) fileState("error", `The server did not answer: ${e.message || e}`);
      return;
    }
    if (mine !== fileSeq) return;  // another file was chosen meanwhile
    filePending = null;
    if (!r.ok || typeof r.data.translatedFileUrl !== "string") { fileState("error", message(r)); return; }
    fileState("done", `${file.name} in ${sent.target.name}: `);
    const link = el("a", { id: "file-link", href: downloadHref(r.data.translatedFileUrl), download: file.name },
      `download ${file.name}`);
    $("#file-status").appendChild(link);
  }

  if (SETTINGS.filesTranslation) {
    const formats = SETTINGS.supportedFilesFormat || [];
    fileInput.setAttribute("accept", formats.join(","));
    $("#file-formats").textContent = `${formats.join(", ")}: the text is translated, the layout kept.`;
    $("#file-translation").hidden = false;
    fileInput.addEventListener("change", fileChosen);
    $("#file-form").addEventListener("submit", translateFile);
    fileState(fileInput.files.length ? "ready" : "idle");  // a file kept over a reload
  }

  input.addEventListener("input", changed);
  $("#api-key").addEventListener("change", changed);
  $("#swap").addEventListener("click", swap);
  showDirection();
  counter();
  setState("idle");
  setAttention("");
  if (input.value.trim()) changed();
})();
