// attenzione serve: translate as you type, show the alternatives, the confidence and the
// attention of each sentence. Talks only to the server that served it (same origin).
(function () {
  "use strict";

  const SETTINGS = JSON.parse(document.getElementById("page-settings").textContent);
  const $ = (sel) => document.querySelector(sel);
  const input = $("#input");
  let seq = 0;          // the latest request; older answers are ignored
  let timer = null;
  let answer = null;    // the latest successful answer
  let selected = 0;     // the sentence shown in the viewer

  if (SETTINGS.keyRequired) document.body.classList.add("key-required");
  $("#lang-pair").textContent = `${SETTINGS.language.source.name} → ${SETTINGS.language.target.name}`;

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

  function setState(name) { document.body.dataset.state = name; }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(translate, Math.max(150, SETTINGS.frontendTimeout || 500));
  }

  async function translate() {
    const text = input.value;
    const mine = ++seq;
    if (!text.trim()) { clear(); return; }
    setState("translating");
    $("#error").textContent = "";
    const body = {
      q: text, source: SETTINGS.language.source.code, target: SETTINGS.language.target.code,
      format: "text", alternatives: 3, scores: true, attention: true, attention_all: true,
    };
    const key = $("#api-key").value.trim();
    if (key) body.api_key = key;
    let res, data;
    try {
      res = await fetch("translate", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      data = await res.json();
    } catch (e) {
      if (mine === seq) { $("#error").textContent = `The server did not answer: ${e}`; setState("error"); }
      return;
    }
    if (mine !== seq) return;  // a newer request is on its way
    if (!res.ok) { $("#error").textContent = data.error || `error ${res.status}`; setState("error"); return; }
    answer = data;
    selected = 0;
    show();
    setState("done");
  }

  function clear() {
    answer = null;
    $("#output").textContent = "";
    $("#meta-conf").innerHTML = "";
    $("#alternatives").innerHTML = "";
    $("#sentences").innerHTML = "";
    $("#viewer-section").hidden = true;
    setState("idle");
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
      const tr = el("tr", { "data-i": i });
      tr.appendChild(el("td", {}, s.source));
      tr.appendChild(el("td", {}, s.translation));
      const td = el("td");
      td.appendChild(confidence(s.confidence));
      tr.appendChild(td);
      tr.addEventListener("click", () => { selected = i; view(); });
      table.appendChild(tr);
    });
    view();
  }

  function view() {
    const att = (answer.attention || [])[selected];
    document.querySelectorAll("#sentences tr").forEach((tr, i) => tr.classList.toggle("on", i === selected));
    $("#viewer-section").hidden = !att;
    if (!att) return;
    window.attenzioneViewer.mount(att.maps, { lastLayer: true });
    const pairs = att.alignment.pairs.map(([s, t]) => `${att.alignment.target_words[t]}→${att.alignment.source_words[s]}`);
    $("#alignment").textContent = pairs.join("  ·  ");
  }

  input.addEventListener("input", schedule);
  $("#api-key").addEventListener("change", schedule);
  setState("idle");
  if (input.value.trim()) schedule();
})();
