// ctxlab inspector, the index: renders the JSON block #data (see ctxlab/analysis/inspector_site.py).
// No network, no library: plain DOM, text set through textContent (never parsed as HTML).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  // a row is a list in data.keys' order; a text column in data.tables holds the value's position
  const runs = data.runs.map((row) => {
    const run = {};
    data.keys.forEach((k, i) => { run[k] = data.tables[k] ? data.tables[k][row[i]] : row[i]; });
    run.id = run.id_transcript + "/" + run.id_strategy;
    return run;
  });
  const columns = data.columns; // [key, header, kind]
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const PAGE = 500; // rows drawn at first; "show all" draws the rest
  const state = { sort: null, desc: false, limit: PAGE };

  $("title").textContent = "ctxlab inspector: " + data.title + " (" + runs.length.toLocaleString("en-US") + " runs)";
  $("command").textContent = data.command ? "command: " + data.command : "";
  const s = data.settings || {};
  const keys = Object.keys(s);
  // token counts are whole tokens (T2 = 0.4 × 16,384 is 6,554 tokens, as the terminal says); off: an empty setting
  const shown = (k, v) => (v === null || v === undefined || v === "" ? "off" : typeof v === "number" && k.endsWith("_tokens") ? Math.round(v).toLocaleString("en-US") : v);
  if (keys.length) $("settings").textContent = "settings: " + keys.map((k) => k + " = " + shown(k, s[k])).join(", ");
  if (data.problems.length || data.cut) {
    const box = el("div", { class: "box" });
    for (const p of data.problems) box.appendChild(el("div", { class: "problem" }, "problem: " + p));
    if (data.cut) box.appendChild(el("div", {}, `${data.cut} run(s) have their message texts cut shorter to keep each run's data under ${Number(data.limit_bytes).toLocaleString("en-US")} bytes (the run page says how short)`));
    $("problems").appendChild(box);
  }

  function options(select, key) {
    const values = [...new Set(runs.map((r) => r[key]).filter((v) => v !== null && v !== ""))].sort();
    for (const v of values) select.appendChild(el("option", { value: v }, v));
  }
  options($("f-strategy"), "strategy");
  options($("f-source"), "source");
  options($("f-format"), "format");

  const head = $("runs-head");
  for (const [key, header, kind] of columns) {
    const th = el("th", { class: kind === "text" ? "name" : "", "data-key": key }, header);
    th.addEventListener("click", () => {
      if (state.sort === key) state.desc = !state.desc;
      else { state.sort = key; state.desc = kind !== "text"; }
      render();
    });
    head.appendChild(th);
  }

  function failures(r) {
    return (r.failed || 0) + (r.fallback || 0) + (r.declined || 0) + (r.rejected || 0);
  }

  function keep(r, q, f) {
    if (q && !r.transcript.toLowerCase().includes(q) && !(r.file || "").toLowerCase().includes(q)) return false;
    if (f.strategy && r.strategy !== f.strategy) return false;
    if (f.source && r.source !== f.source) return false;
    if (f.format && r.format !== f.format) return false;
    if (f.failures === "failed" && !((r.failed || 0) + (r.fallback || 0))) return false;
    if (f.failures === "fallback" && !r.fallback) return false;
    if (f.failures === "declined" && !r.declined) return false;
    if (f.failures === "rejected" && !r.rejected) return false;
    if (f.failures === "any" && !failures(r)) return false;
    if (f.failures === "none" && failures(r)) return false;
    if (f.reached === "yes" && r.reached !== true) return false;
    if (f.reached === "no" && r.reached === true) return false;
    return true;
  }

  function compare(a, b) {
    const x = a[state.sort], y = b[state.sort];
    const nx = x === null || x === undefined || x === "", ny = y === null || y === undefined || y === "";
    if (nx || ny) return nx === ny ? 0 : nx ? 1 : -1; // empty cells last, either way
    const c = typeof x === "string" ? x.localeCompare(y) : x === y ? 0 : x < y ? -1 : 1;
    return state.desc ? -c : c;
  }

  function cell(r, key, kind) {
    const v = r[key];
    let text = "";
    if (v === null || v === undefined) text = "";
    else if (kind === "bool") text = v ? "yes" : "no";
    else if (key === "cost_usd") text = v.toFixed(4);
    else if (kind === "float") text = v.toFixed(1);
    else if (kind === "int") text = Number(v).toLocaleString("en-US");
    else text = v;
    const cls = [kind === "text" ? "text" : ""];
    if ((key === "failed" || key === "fallback" || key === "rejected") && v) cls.push("bad");
    if (key === "declined" && v) cls.push("warn");
    const td = el("td", { class: cls.join(" ").trim() || null, "data-key": key });
    if (key === "transcript") {
      const a = el("a", { href: data.site + "/run.html#run=" + encodeURIComponent(r.id), class: "open", title: r.file || r.transcript }, text);
      td.appendChild(a);
    } else {
      td.textContent = text;
      if (key === "source" && r.file) td.title = r.file;
    }
    return td;
  }

  // as on the run page: draw the table again once the lazily loaded CJK subset font has arrived
  if (document.fonts) document.fonts.addEventListener("loadingdone", () => render());

  function render() {
    const q = $("search").value.trim().toLowerCase();
    const f = {
      strategy: $("f-strategy").value, source: $("f-source").value, format: $("f-format").value,
      failures: $("f-failures").value, reached: $("f-reached").value,
    };
    let shown = runs.filter((r) => keep(r, q, f));
    if (state.sort) shown = shown.slice().sort(compare);
    for (const th of head.children) {
      th.classList.remove("sorted-asc", "sorted-desc");
      if (th.dataset.key === state.sort) th.classList.add(state.desc ? "sorted-desc" : "sorted-asc");
    }
    const body = $("runs-body");
    const frag = document.createDocumentFragment();
    for (const r of shown.slice(0, state.limit)) {
      const tr = el("tr", { "data-id": r.id });
      for (const [key, , kind] of columns) tr.appendChild(cell(r, key, kind));
      frag.appendChild(tr);
    }
    body.textContent = "";
    body.appendChild(frag);
    $("count").textContent = `${shown.length.toLocaleString("en-US")} of ${runs.length.toLocaleString("en-US")} runs`;
    const more = $("more");
    more.textContent = "";
    if (shown.length > state.limit) {
      const b = el("button", { type: "button", id: "show-all" }, `show all ${shown.length.toLocaleString("en-US")} rows (${state.limit} shown)`);
      b.addEventListener("click", () => { state.limit = Infinity; render(); });
      more.appendChild(b);
    }
    const params = new URLSearchParams();
    if (q) params.set("q", q);
    for (const [k, v] of Object.entries(f)) if (v) params.set(k, v);
    if (state.sort) params.set("sort", (state.desc ? "-" : "") + state.sort);
    history.replaceState(null, "", "#" + params.toString());
  }

  // filters from the URL (a link to a filtered view)
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.has("q")) $("search").value = hash.get("q");
  for (const k of ["strategy", "source", "format", "failures", "reached"]) if (hash.has(k)) $("f-" + k).value = hash.get(k);
  if (hash.has("sort")) { const v = hash.get("sort"); state.desc = v.startsWith("-"); state.sort = v.replace(/^-/, ""); }
  let timer = null;
  $("search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { state.limit = PAGE; render(); }, 120); });
  for (const id of ["f-strategy", "f-source", "f-format", "f-failures", "f-reached"]) $(id).addEventListener("change", () => { state.limit = PAGE; render(); });
  render();
  document.body.dataset.readyMs = String(Math.round(performance.now())); // from navigation start
  document.body.dataset.ready = "true";
})();
