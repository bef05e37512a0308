"""The CSS and JavaScript of the trail viewer page (``mcpfsm._tooling.report``), inlined into every report.

The script reads the ``<script type="application/json" id="trail">`` data and knows no machine: it lights
``g[data-state]`` and ``g[data-edge="previous:trigger"]`` in the machine's SVG for each step of the selected
run. When it is ready it sets ``data-ready="1"`` on ``<body>`` (what tests and bench/report.py wait for).
"""

from __future__ import annotations

from typing import Final

__all__ = ["SCRIPT", "STYLE"]

STYLE: Final = """
:root { --ink:#1f2328; --muted:#656d76; --line:#d0d7de; --lit:#0969da; --now:#bc4c00; --bad:#cf222e; --ok:#1a7f37; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, sans-serif; color:var(--ink); background:#fff; }
header { padding:8px 16px; border-bottom:1px solid var(--line); background:#f6f8fa; }
h1 { font-size:18px; margin:0 0 6px; }
h2 { font-size:16px; margin:0 0 4px; }
#filters { display:flex; gap:14px; flex-wrap:wrap; align-items:center; }
#filters select { font:inherit; max-width:16em; }
#shown { color:var(--muted); }
#index { overflow:auto; max-height:32vh; border-bottom:2px solid var(--line); }
#detail { padding:10px 16px; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:3px 6px; border-bottom:1px solid var(--line); vertical-align:top; }
thead th { position:sticky; top:0; background:#fff; z-index:1; }
#index table { table-layout:fixed; }
#index th:nth-child(1) { width:4.5em; } #index th:nth-child(2) { width:18%; } #index th:nth-child(3) { width:10%; }
#index th:nth-child(4) { width:7.5em; } #index th:nth-child(5) { width:5em; } #index th:nth-child(6) { width:8em; }
#rows td { white-space:nowrap; overflow:hidden; text-overflow:ellipsis; height:26px; padding-top:0; padding-bottom:0; }
#rows tr.pad td, #rows tr.pad { padding:0; border:0; }
#rows tr { cursor:pointer; }
#rows tr:hover { background:#f6f8fa; }
#rows tr.selected { background:#ddf4ff; }
td.num { text-align:right; font-variant-numeric:tabular-nums; }
td.states { color:var(--muted); font-size:12px; }
.o-succeeded .outcome, .o-authorized .outcome { color:var(--ok); }
.o-failed .outcome, .o-cancelled .outcome, .o-unfinished .outcome { color:var(--bad); }
#run-meta { color:var(--muted); margin:0 0 8px; }
#stepper { display:flex; gap:8px; align-items:center; margin:6px 0; }
#stepper button { font:inherit; padding:2px 10px; }
#position { min-width:16em; font-weight:600; }
#figures { border:1px solid var(--line); border-radius:6px; margin:8px 0; overflow:auto; max-height:75vh; }
#figures svg { display:block; width:100%; height:auto; }
#figures.natural svg { max-width:none; }
svg.machine g.node ellipse, svg.machine g.node polygon { transition:fill .15s; }
svg.machine.lit g.edge:not(.taken) { opacity:.3; }
svg.machine.lit g.node:not(.visited) { opacity:.45; }
svg.machine g.node.visited ellipse { fill:#ddf4ff; stroke:var(--lit); stroke-width:2.5; }
svg.machine g.node.current ellipse { fill:#fff1e5; stroke:var(--now); stroke-width:4; }
svg.machine g.edge.taken path { stroke:var(--lit); stroke-width:3; }
svg.machine g.edge.taken polygon { fill:var(--lit); stroke:var(--lit); }
svg.machine g.edge.taken text { fill:var(--lit); font-weight:700; }
svg.machine g.edge.current path { stroke:var(--now); stroke-width:4.5; }
svg.machine g.edge.current polygon { fill:var(--now); stroke:var(--now); }
svg.machine g.edge.current text { fill:var(--now); }
svg.machine g.edge text.badge { fill:#fff; font:bold 18px system-ui, sans-serif; }
svg.machine rect.badge { fill:var(--lit); }
svg.machine g.current rect.badge { fill:var(--now); }
#timeline td { font-size:13px; }
#timeline tr.ahead { color:#8c959f; }
#timeline tr.current { background:#fff1e5; }
#timeline tr.stray td:nth-child(3) { color:var(--bad); }
#timeline code { font-size:12px; }
.detail { display:block; white-space:pre-wrap; word-break:break-word; }
"""

SCRIPT: Final = r"""
"use strict";
(function () {
  const began = performance.now();
  const data = JSON.parse(document.getElementById("trail").textContent);
  const runs = data.runs;
  const $ = (id) => document.getElementById(id);
  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  const esc = (text) => String(text).replace(/[&<>"']/g, (c) => ESC[c]);
  const FIELDS = ["outcome", "label", "server", "machine"];
  const chosen = { outcome: "", label: "", server: "", machine: "" };
  const COLUMNS = new Set(["seq", "state", "previous", "trigger", "elapsed", "attempt", "round", "at"]);
  let selected = -1;
  let step = 0;
  let lit = [];

  for (const field of FIELDS) {
    const select = $("f-" + field);
    const values = [...new Set(runs.map((run) => run[field]))].filter((value) => value !== "").sort();
    select.innerHTML = '<option value="">all</option>' +
      values.map((value) => `<option value="${esc(value)}">${esc(value)}</option>`).join("");
    select.disabled = values.length === 0;
    select.addEventListener("change", () => { chosen[field] = select.value; drawIndex(); });
  }

  // The index draws only the rows in view (and a margin): 10,000 calls stay one quick page (bench/report.py).
  let shown = [];
  let rowHeight = 0;
  let pending = false;
  let lastDrawn = "";

  function drawIndex() {
    shown = [];
    for (let i = 0; i < runs.length; i++) {
      const run = runs[i];
      if (FIELDS.every((field) => !chosen[field] || run[field] === chosen[field])) shown.push(i);
    }
    $("shown").textContent = `${shown.length} of ${runs.length} calls`;
    lastDrawn = "";
    drawWindow();
  }

  function rowHtml(i) {
    const run = runs[i];
    const states = esc(run.events.map((event) => event.state).join(" \u2192 "));
    return `<tr data-run="${i}" data-call="${esc(run.id)}" class="o-${esc(run.outcome)}` +
      `${i === selected ? " selected" : ""}"><td>${i + 1}</td><td>${esc(run.label)}</td>` +
      `<td>${esc(run.server)}</td><td class="outcome">${esc(run.outcome)}</td><td class="num">${run.ms}</td>` +
      `<td>${esc(run.machine)}</td><td class="states" title="${states}">${states}</td></tr>`;
  }

  function drawWindow() {
    pending = false;
    const box = $("index");
    const height = rowHeight || 26;
    const first = Math.max(0, Math.floor(box.scrollTop / height) - 30);
    const last = Math.min(shown.length, first + Math.ceil(box.clientHeight / height) + 60);
    const drawn = `${first} ${last} ${selected} ${shown.length} ${shown[0]}`;
    if (drawn === lastDrawn) return;  // the rows in the DOM are the ones wanted: keep them
    lastDrawn = drawn;
    const html = [];
    if (first > 0) html.push(`<tr class="pad" style="height:${first * height}px"></tr>`);
    for (let k = first; k < last; k++) html.push(rowHtml(shown[k]));
    if (last < shown.length) html.push(`<tr class="pad" style="height:${(shown.length - last) * height}px"></tr>`);
    $("rows").innerHTML = html.join("");
    if (!rowHeight) {
      const row = document.querySelector("#rows tr[data-run]");
      if (row) rowHeight = row.getBoundingClientRect().height || 26;
    }
  }

  $("index").addEventListener("scroll", () => {
    if (!pending) { pending = true; requestAnimationFrame(drawWindow); }
  });

  function reveal(index) {
    // Scroll the index so the selected run's row is in view, then draw that window.
    const at = shown.indexOf(index);
    if (at < 0) return;
    const box = $("index");
    const height = rowHeight || 26;
    const top = at * height;
    const header = box.querySelector("thead").getBoundingClientRect().height;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (top + height > box.scrollTop + box.clientHeight - header) {
      box.scrollTop = top + height - box.clientHeight + header;
    }
    drawWindow();
  }

  function edgeKey(run, event, index) {
    if (event.previous != null && event.trigger != null) return `${event.previous}:${event.trigger}`;
    const machine = data.machines[run.machine];
    return index === 0 && machine && event.state === machine.initial ? "start" : null;
  }

  function details(event) {
    const parts = [];
    for (const [name, value] of Object.entries(event)) {
      if (COLUMNS.has(name)) continue;
      let text;
      if (name === "headers") text = Object.entries(value).map(([key, val]) => `${key}: ${val}`).join("\n");
      else if (name === "error") {
        const code = value.code == null ? "" : ` ${value.code}`;
        text = `${value.type || "error"}${code}: ${value.message || ""}`;
      } else if (name === "input_requests") {
        text = Object.entries(value).map(([key, method]) => `${key} (${method})`).join(", ") || "nothing (state only)";
      } else if (name === "input_responses") text = Object.keys(value).join(", ");
      else if (name === "scopes" && Array.isArray(value)) text = value.join(" ");
      else text = typeof value === "object" ? JSON.stringify(value) : String(value);
      parts.push(`<span class="detail" data-field="${esc(name)}"><b>${esc(name)}</b> ${esc(text)}</span>`);
    }
    return parts.join("");
  }

  function figureOf(run) {
    let found = null;
    for (const figure of document.querySelectorAll("#figures .figure")) {
      const mine = figure.dataset.machine === run.machine;
      figure.hidden = !mine;
      if (mine) found = figure.querySelector("svg");
    }
    return found;
  }

  function select(index) {
    if (index < 0 || index >= runs.length) return;
    selected = index;
    const run = runs[index];
    reveal(index);
    $("empty").hidden = true;
    $("run").hidden = false;
    $("run").dataset.call = run.id;
    $("run").dataset.machine = run.machine;
    $("run-title").textContent = `${run.label || run.machine} \u2014 ${run.outcome}`;
    const machine = data.machines[run.machine];
    $("run-meta").textContent = [`call ${run.id}`, machine ? machine.title : `machine ${run.machine}`,
      run.server ? `server ${run.server}` : "", `began ${run.at}`, `${run.ms} ms`].filter(Boolean).join(" \u00b7 ");
    const svg = figureOf(run);
    $("no-diagram").hidden = svg !== null;
    $("no-diagram").textContent = svg ? "" : `No definition of the ${run.machine} machine here: timeline only.`;
    $("events").innerHTML = run.events.map((event, i) =>
      `<tr data-step="${i}"><td>${i + 1}</td><td><code>${esc(event.state)}</code></td>` +
      `<td>${event.trigger == null ? "" : `<code>${esc(event.trigger)}</code>`}</td>` +
      `<td class="num">${(event.elapsed * 1000).toFixed(1)}</td><td>${event.attempt ?? 1}</td>` +
      `<td>${event.round ?? 0}</td><td>${details(event)}</td></tr>`).join("");
    setStep(run.events.length - 1);
  }

  function clearLit() {
    for (const element of lit) {
      element.classList.remove("visited", "current", "taken");
      delete element.dataset.steps;
    }
    for (const badge of document.querySelectorAll("#figures .badge")) badge.remove();
    lit = [];
  }

  function badge(edge, label) {
    // The step numbers at which the edge was taken, on a pill left of its label.
    const text = edge.querySelector("text");
    if (!text) return;
    const ns = "http://www.w3.org/2000/svg";
    const width = 11 * label.length + 10;
    const box = text.getBBox();
    const x = box.x - width - 4;
    const y = box.y + box.height / 2;
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("class", "badge");
    rect.setAttribute("x", String(x)); rect.setAttribute("y", String(y - 11));
    rect.setAttribute("width", String(width)); rect.setAttribute("height", "22"); rect.setAttribute("rx", "11");
    const number = document.createElementNS(ns, "text");
    number.setAttribute("class", "badge");
    number.setAttribute("x", String(x + 5)); number.setAttribute("y", String(y + 6));
    number.textContent = label;
    edge.append(rect, number);
  }

  function setStep(target) {
    const run = runs[selected];
    if (!run) return;
    step = Math.max(0, Math.min(target, run.events.length - 1));
    clearLit();
    const svg = document.querySelector(`#figures .figure[data-machine="${CSS.escape(run.machine)}"] svg`);
    const edges = new Map();
    for (let i = 0; i <= step; i++) {
      const event = run.events[i];
      if (svg) {
        const node = svg.querySelector(`g.node[data-state="${CSS.escape(event.state)}"]`);
        if (node) { node.classList.add("visited"); if (i === step) node.classList.add("current"); lit.push(node); }
        const key = edgeKey(run, event, i);
        const edge = key && svg.querySelector(`g.edge[data-edge="${CSS.escape(key)}"]`);
        const row = document.querySelector(`#events tr[data-step="${i}"]`);
        if (edge) {
          edge.classList.add("taken");
          if (i === step) edge.classList.add("current");
          edges.set(edge, [...(edges.get(edge) || []), i + 1]);
          lit.push(edge);
        } else if (row && key !== "start" && i > 0) row.classList.add("stray");
      }
    }
    for (const [edge, steps] of edges) { edge.dataset.steps = steps.join(" "); badge(edge, steps.join(",")); }
    if (svg) svg.classList.add("lit");
    for (const row of document.querySelectorAll("#events tr")) {
      const i = Number(row.dataset.step);
      row.classList.toggle("current", i === step);
      row.classList.toggle("ahead", i > step);
    }
    const event = run.events[step];
    $("position").textContent = `step ${step + 1} of ${run.events.length}: ${event.state}`;
    $("run").dataset.step = String(step);
    $("back").disabled = $("first").disabled = step === 0;
    $("forward").disabled = $("last").disabled = step === run.events.length - 1;
  }

  $("rows").addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-run]");
    if (row) select(Number(row.dataset.run));
  });
  $("first").addEventListener("click", () => setStep(0));
  $("back").addEventListener("click", () => setStep(step - 1));
  $("forward").addEventListener("click", () => setStep(step + 1));
  $("last").addEventListener("click", () => setStep(Number.MAX_SAFE_INTEGER));
  $("zoom").addEventListener("click", () => {
    const figures = $("figures");
    figures.classList.toggle("natural");
    for (const svg of figures.querySelectorAll("svg")) {
      svg.style.width = figures.classList.contains("natural") ? svg.dataset.width : "";
    }
  });
  function neighbour(offset) {
    if (shown.length === 0) return;
    const at = shown.indexOf(selected);
    select(shown[Math.max(0, Math.min(shown.length - 1, at < 0 ? 0 : at + offset))]);
  }
  document.addEventListener("keydown", (event) => {
    if (event.target instanceof HTMLSelectElement || event.altKey || event.ctrlKey || event.metaKey) return;
    const moves = {
      ArrowRight: () => setStep(step + 1), ArrowLeft: () => setStep(step - 1),
      Home: () => setStep(0), End: () => setStep(Number.MAX_SAFE_INTEGER),
      ArrowDown: () => neighbour(1), ArrowUp: () => neighbour(-1),
    };
    const move = moves[event.key];
    if (move) { event.preventDefault(); move(); }
  });

  function fromHash() {
    // #call=ID selects that run, #run=N the N-th of the index (a link into the report).
    const number = location.hash.match(/^#run=(\d+)$/);
    if (number) return Number(number[1]) >= 1 && Number(number[1]) <= runs.length ? Number(number[1]) - 1 : -1;
    const wanted = decodeURIComponent((location.hash.match(/^#call=(.*)$/) || [])[1] || "");
    return runs.findIndex((run) => run.id === wanted);
  }
  window.addEventListener("hashchange", () => { const index = fromHash(); if (index >= 0) select(index); });

  drawIndex();
  select(Math.max(0, fromHash()));
  document.body.dataset.scriptMs = (performance.now() - began).toFixed(1);  // read by bench/report.py
  document.body.dataset.ready = "1";
})();
"""
