// ctxlab inspector, one run: loads data/<id>.js (ctxlabRun({...})) named by the URL (#run=ID&call=K&compare=ID)
// and draws its calls (see ctxlab/analysis/inspector.py for the data). No network, no library: plain DOM,
// text set through textContent (never parsed as HTML); a data file is a <script> next to this page.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const fmt = (n) => (n === null || n === undefined ? "" : Number(n).toLocaleString("en-US"));
  const state = { run: null, compare: null, call: 0, changedOnly: false, query: "", hits: [], hit: -1 };
  const loaded = new Map(); // id -> run data
  const waiting = new Map(); // id -> [resolve, reject]
  const JUMPS = [
    ["offloaded", "offloaded", (c) => (c.row.offloaded || 0) > 0],
    ["truncated", "truncated", (c) => (c.row.truncated_args || 0) > 0],
    ["summarized", "summarized (L2)", (c) => c.row.level === "L2"],
    ["failed", "failed", (c) => c.failures.some((f) => f.kind !== "declined")],
    ["declined", "declined", (c) => c.failures.some((f) => f.kind === "declined")],
  ];
  const MARKS = [
    ["kept", "sent as it is"], ["offloaded", "tool result offloaded to a file (R6)"], ["truncated", "tool-call argument truncated (R5)"],
    ["summarized", "not sent: behind the summary's cutoff"], ["summary", "the summary message"], ["observation", "tool result recorded as a user turn"],
    ["changed", "sent changed by the strategy"], ["dropped", "not sent, no summary"],
  ];

  window.ctxlabRun = function (data) {
    prepare(data);
    loaded.set(data.id, data);
    const w = waiting.get(data.id);
    if (w) { waiting.delete(data.id); w[0](data); }
  };

  function load(id) {
    if (loaded.has(id)) return Promise.resolve(loaded.get(id));
    return new Promise((resolve, reject) => {
      waiting.set(id, [resolve, reject]);
      const script = el("script", { src: "data/" + id.split("/").map(encodeURIComponent).join("/") + ".js" });
      script.onerror = () => { waiting.delete(id); reject(new Error("no data file for run " + id + " (data/" + id + ".js)")); };
      document.body.appendChild(script);
    });
  }

  function prepare(run) {
    run.byCall = new Map(run.calls.map((c) => [c.call_index, c]));
    run.callIndices = run.calls.map((c) => c.call_index);
    run.rawPos = new Map();
    run.raw.forEach((m, p) => { if (!run.rawPos.has(m)) run.rawPos.set(m, p); });
    for (const c of run.calls) {
      c.failures = c.failures || [];
      c.events = c.events || [];
    }
  }

  function sentOf(rec) {
    if (!rec._sent) {
      const out = [];
      for (let k = 0; k < rec.sent.length; k += 2) for (let j = 0; j < rec.sent[k + 1]; j++) out.push(rec.sent[k] + j);
      rec._sent = out;
    }
    return rec._sent;
  }

  // --- marks (raw_view_marks / sent_view_marks in ctxlab/analysis/inspector.py apply the same rules) ---
  function rawMarks(run, rec) {
    const sentList = sentOf(rec), sent = new Set(sentList), byId = new Map();
    for (const i of sentList) if (run.messages[i].id) byId.set(run.messages[i].id, i);
    const summarized = sentList.some((i) => run.messages[i].mark === "summary");
    return run.raw.slice(0, rec.raw_count).map((i) => {
      const m = run.messages[i];
      if (sent.has(i)) return [i, m.mark === "observation" ? "observation" : "kept"];
      if (m.id && byId.has(m.id)) {
        const other = run.messages[byId.get(m.id)].mark;
        return [i, other === "kept" ? "changed" : other];
      }
      return [i, summarized ? "summarized" : "dropped"];
    });
  }

  function sentMarks(run, rec) {
    const raw = new Set(run.raw.slice(0, rec.raw_count));
    return sentOf(rec).map((i) => {
      const mark = run.messages[i].mark;
      return [i, mark === "kept" && !raw.has(i) ? "changed" : mark];
    });
  }

  // --- text with the search query marked ------------------------------------------------------------
  // control characters (a tool's ANSI colour codes) as their visible pictures, not tofu boxes
  const shown = (text) => (text ? String(text).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, (ch) => String.fromCharCode(0x2400 + ch.charCodeAt(0))).replace(/\u007f/g, "\u2421") : text);

  function marked(tag, attrs, text) {
    text = shown(text);
    const node = el(tag, attrs);
    const q = state.query;
    if (!q || !text) { node.textContent = text || ""; return node; }
    const lower = text.toLowerCase();
    let at = 0;
    for (let k = lower.indexOf(q); k >= 0; k = lower.indexOf(q, at)) {
      node.appendChild(document.createTextNode(text.slice(at, k)));
      node.appendChild(el("mark", {}, text.slice(k, k + q.length)));
      at = k + q.length;
    }
    node.appendChild(document.createTextNode(text.slice(at)));
    return node;
  }

  function matches(m) {
    const q = state.query;
    if (!q) return false;
    if (m._lower === undefined) m._lower = [m.text || "", m.name || "", ...(m.calls || []).map((c) => (c.name || "") + " " + c.args)].join("\n").toLowerCase();
    return m._lower.includes(q);
  }

  function messageNode(run, i, mark) {
    const m = run.messages[i];
    const box = el("div", { class: "msg" + (matches(m) ? " hit" : "") + (m.failure ? " failure" : ""), "data-mark": mark, "data-index": i, "data-role": m.role });
    const head = el("div", { class: "head" });
    head.appendChild(el("span", { class: "role" }, m.role + (m.name ? " " + m.name : "") + (m.status === "error" ? " (error)" : "")));
    head.appendChild(el("span", { class: "tag " + mark }, mark));
    if (m.failure) head.appendChild(el("span", { class: "badge failed" }, m.failure));
    head.appendChild(el("span", { class: "muted" }, fmt(m.tokens) + " tokens"));
    if (m.path) {
      if (m.href) head.appendChild(el("a", { href: run.base + "/" + m.href, target: "_blank", class: "file" }, m.path));
      else head.appendChild(el("span", { class: "muted" }, m.path + " (file not in this folder)"));
    }
    if (m.id) head.appendChild(el("span", { class: "muted" }, m.id));
    head.addEventListener("click", (e) => { if (e.target.tagName !== "A") box.classList.toggle("open"); });
    box.appendChild(head);
    if (m.text) box.appendChild(marked("pre", {}, m.text));
    for (const c of m.calls || []) box.appendChild(marked("div", { class: "call" }, "→ " + c.name + "(" + c.args + ")"));
    return box;
  }

  function fill(target, run, list, system) {
    target.textContent = "";
    const frag = document.createDocumentFragment();
    if (system !== null && system !== undefined && !state.changedOnly) frag.appendChild(messageNode(run, system, "kept"));
    let hidden = 0;
    const flush = () => { if (hidden) { frag.appendChild(el("div", { class: "gap" }, `… ${hidden} message${hidden > 1 ? "s" : ""} sent as ${hidden > 1 ? "they are" : "it is"}`)); hidden = 0; } };
    for (const [i, mark] of list) {
      // "changed only" folds the messages sent as they are, but never a search match
      if (state.changedOnly && (mark === "kept" || mark === "observation") && !matches(run.messages[i])) { hidden += 1; continue; }
      flush();
      frag.appendChild(messageNode(run, i, mark));
    }
    flush();
    if (state.changedOnly && !frag.childNodes.length) frag.appendChild(el("div", { class: "gap" }, "no changed message in this view"));
    target.appendChild(frag);
  }

  // --- header, problems, controls -----------------------------------------------------------------
  function header(run) {
    document.title = `ctxlab: ${run.transcript} [${run.strategy}]`;
    $("title").textContent = `${run.transcript} [${run.strategy}]`;
    const bits = [run.source ? "file: " + run.source : null, run.format ? "format: " + run.format : null, `${run.calls.length} calls`];
    if (run.limit < 20000 || run.slim) bits.push(`message texts cut to ${fmt(run.limit)} characters${run.slim ? ", events shortened" : ""} to keep this run's data small (the files keep everything)`);
    $("meta").textContent = bits.filter(Boolean).join(" · ");
    const counts = {};
    for (const f of run.failures) counts[f.kind] = (counts[f.kind] || 0) + 1;
    const badges = $("badges");
    badges.textContent = "";
    if (!run.failures.length) badges.appendChild(el("span", { class: "badge ok" }, "no failed, fallback, declined or rejected summary"));
    for (const [kind, n] of Object.entries(counts)) badges.appendChild(el("span", { class: "badge " + kind.replace(" ", "-"), "data-kind": kind }, `${n} ${kind}${kind.endsWith("request") ? "s" : n > 1 ? " summaries" : " summary"}`));
    const problems = $("problems");
    problems.textContent = "";
    if (run.failures.length) {
      const box = el("div", { class: "box", id: "problems-box" });
      box.appendChild(el("div", {}, "problems of this run (the rules: ctxlab/replay/failures.py):"));
      for (const f of run.failures) {
        const line = el("div", { class: "problem", "data-call": f.call_index });
        const a = el("a", { href: "#", class: "go" }, `call ${f.call_index}`);
        a.addEventListener("click", (e) => { e.preventDefault(); go(f.call_index, "failed"); });
        line.appendChild(a);
        line.appendChild(document.createTextNode(` · ${f.kind}: ${f.reason}`));
        box.appendChild(line);
      }
      problems.appendChild(box);
    }
    const select = $("compare-select");
    select.textContent = "";
    select.appendChild(el("option", { value: "" }, "(none)"));
    for (const s of run.siblings) if (s.id !== run.id) select.appendChild(el("option", { value: s.id }, s.strategy));
    legend();
    tools(run);
    jumps(run);
  }

  function legend() {
    const box = $("legend");
    box.textContent = "";
    box.appendChild(el("span", { class: "muted" }, "call strip:"));
    for (const [cls, text] of [["none", "below T, sent as it is"], ["L1", "L1 round (trim, offload)"], ["L2", "L2 round (summary)"], ["failed", "failed, fallback or rejected"], ["declined", "declined summary"], ["current", "this call"]]) {
      const item = el("span", { class: "item" });
      item.appendChild(el("span", { class: "legend-chip " + cls }, "7"));
      item.appendChild(document.createTextNode(text));
      box.appendChild(item);
    }
    box.appendChild(el("span", { class: "muted" }, "messages:"));
    for (const [mark, text] of MARKS) {
      const item = el("span", { class: "item", title: text });
      item.appendChild(el("span", { class: "tag " + mark }, mark));
      box.appendChild(item);
    }
  }

  function tools(run) {
    const box = $("tools");
    box.textContent = "";
    $("tools-title").textContent = run.tools.length
      ? `tool schemas: ${run.tools.length} tools, ${fmt(run.tools_tokens)} tokens (each request's "system + tools" part holds them)`
      : "tool schemas: none recorded in this transcript";
    if (!run.tools.length) return;
    const table = el("table");
    const head = el("tr");
    for (const h of ["tool", "tokens", "schema"]) head.appendChild(el("th", { class: h === "schema" ? "name" : "" }, h));
    table.appendChild(head);
    for (const t of run.tools) {
      const tr = el("tr");
      tr.appendChild(el("td", { class: "name" }, t.name));
      tr.appendChild(el("td", {}, fmt(t.tokens)));
      const td = el("td", { class: "name" });
      td.appendChild(el("pre", {}, t.schema));
      tr.appendChild(td);
      table.appendChild(tr);
    }
    box.appendChild(table);
  }

  function jumps(run) {
    const box = $("jumps");
    box.textContent = "";
    for (const [kind, label, test] of JUMPS) {
      const n = run.calls.filter(test).length;
      const span = el("span", { class: "jump", "data-kind": kind, title: `${n} calls` });
      const prev = el("button", { type: "button", class: "jump-prev", "data-kind": kind, title: `previous ${label} call` }, "◀");
      const next = el("button", { type: "button", class: "jump-next", "data-kind": kind, title: `next ${label} call` }, "▶");
      prev.addEventListener("click", () => jump(kind, -1));
      next.addEventListener("click", () => jump(kind, 1));
      if (!n) { prev.disabled = true; next.disabled = true; }
      span.appendChild(prev);
      span.appendChild(document.createTextNode(`${label} (${n})`));
      span.appendChild(next);
      box.appendChild(span);
    }
  }

  function jump(kind, delta) {
    const run = state.run;
    const test = JUMPS.find((j) => j[0] === kind)[2];
    const pos = run.callIndices.indexOf(state.call);
    for (let p = pos + delta; p >= 0 && p < run.calls.length; p += delta) {
      if (test(run.calls[p])) { go(run.calls[p].call_index, kind); return; }
    }
  }

  // after a jump, the first message the jump is about comes into view
  function reveal(kind) {
    const selector = {
      offloaded: "#sent-view .msg[data-mark='offloaded']",
      truncated: "#sent-view .msg[data-mark='truncated']",
      summarized: "#sent-view .msg[data-mark='summary'], #raw-view .msg[data-mark='summarized']",
      failed: "#call-failures",
    }[kind];
    const node = selector && document.querySelector(selector);
    if (node) { node.scrollIntoView({ block: "center" }); flash(node); }
  }

  function flash(node) {
    node.classList.add("flash");
    setTimeout(() => node.classList.remove("flash"), 1500);
  }

  function go(call, kind) {
    state.call = call;
    clampCall();
    render();
    if (kind) reveal(kind);
  }

  function clampCall() {
    const idx = state.run.callIndices;
    if (!idx.length) { state.call = 0; return; }
    if (!state.run.byCall.has(state.call)) {
      state.call = idx.reduce((best, k) => (Math.abs(k - state.call) < Math.abs(best - state.call) ? k : best), idx[0]);
    }
  }

  function step(delta) {
    const idx = state.run.callIndices;
    const pos = idx.indexOf(state.call) + delta;
    if (pos >= 0 && pos < idx.length) { state.call = idx[pos]; render(); }
  }

  // --- search ----------------------------------------------------------------------------------------
  function firstCallOf(run, i) {
    const p = run.rawPos.get(i);
    for (const c of run.calls) {
      if (p !== undefined && c.raw_count > p) return c.call_index;
      if (sentOf(c).includes(i)) return c.call_index;
    }
    return null;
  }

  function search() {
    const run = state.run;
    state.query = $("search").value.trim().toLowerCase();
    state.hits = [];
    state.hit = -1;
    const box = $("hits");
    box.textContent = "";
    if (state.query.length < 2) {
      $("hits-section").classList.add("hidden");
      $("hit-info").textContent = "";
      render();
      return;
    }
    run.messages.forEach((m, i) => { if (matches(m)) state.hits.push({ kind: "message", index: i, call: firstCallOf(run, i), text: m.text || "", role: m.role }); });
    run.summaries.forEach((s, k) => { if ((s.text || "").toLowerCase().includes(state.query)) state.hits.push({ kind: "summary", index: k, call: s.call_index, text: s.text, role: "summary" }); });
    state.hits = state.hits.filter((h) => h.call !== null).sort((a, b) => a.call - b.call || a.index - b.index);
    $("hits-section").classList.remove("hidden");
    $("hit-info").textContent = `${state.hits.length} match${state.hits.length === 1 ? "" : "es"}`;
    state.hits.slice(0, 300).forEach((h, n) => {
      const lower = h.text.toLowerCase(), k = lower.indexOf(state.query);
      const snippet = (k > 40 ? "…" : "") + h.text.slice(Math.max(0, k - 40), k + state.query.length + 60).replace(/\s+/g, " ");
      const a = el("a", { href: "#", class: "hit-link", "data-hit": n });
      a.appendChild(document.createTextNode(`call ${h.call} · ${h.kind === "summary" ? "summary" : h.role + " #" + h.index} · `));
      a.appendChild(marked("span", {}, snippet));
      a.addEventListener("click", (e) => { e.preventDefault(); showHit(n); });
      box.appendChild(a);
    });
    if (state.hits.length > 300) box.appendChild(el("div", { class: "muted" }, `… ${state.hits.length - 300} more (↑ ↓ step through all)`));
    render();
  }

  function showHit(n) {
    if (!state.hits.length) return;
    state.hit = (n + state.hits.length) % state.hits.length;
    const h = state.hits[state.hit];
    state.call = h.call;
    render();
    $("hit-info").textContent = `match ${state.hit + 1} of ${state.hits.length}`;
    for (const a of document.querySelectorAll("#hits a")) a.classList.toggle("current", Number(a.dataset.hit) === state.hit);
    const node = h.kind === "summary"
      ? document.querySelectorAll("#summaries .summary")[h.index]
      : document.querySelector(`#sent-view .msg[data-index='${h.index}']`) || document.querySelector(`#raw-view .msg[data-index='${h.index}']`);
    if (node) { node.classList.add("open"); node.scrollIntoView({ block: "center" }); flash(node); }
  }

  // --- one call -----------------------------------------------------------------------------------------
  function parts(run, rec, rawMessageTokens) {
    const table = $("parts");
    table.textContent = "";
    const row = rec.row || {};
    const head = el("tr");
    for (const h of ["tokens", "total", "system + tools", "user", "assistant", "tool", "summary", "messages", "level", "offloaded", "truncated args", "cost $"]) head.appendChild(el("th", {}, h));
    table.appendChild(head);
    const rawRoles = { system: (row.raw_tokens || 0) - rawMessageTokens, human: 0, ai: 0, tool: 0 };
    for (const i of run.raw.slice(0, rec.raw_count)) {
      const m = run.messages[i];
      rawRoles[m.role] = (rawRoles[m.role] || 0) + m.tokens;
    }
    const usd = (v) => (v === undefined || v === null ? "" : Number(v).toFixed(5));
    const rawRow = el("tr");
    for (const v of ["raw", row.raw_tokens, rawRoles.system, rawRoles.human, rawRoles.ai, rawRoles.tool, 0, rec.raw_count, "", "", "", usd(row.raw_cost_usd)]) rawRow.appendChild(el("td", {}, typeof v === "number" ? fmt(v) : v));
    table.appendChild(rawRow);
    const sentRow = el("tr");
    for (const v of ["sent", row.view_tokens, row.view_system_tokens, row.view_user_tokens, row.view_assistant_tokens, row.view_tool_tokens, row.view_summary_tokens, sentOf(rec).length, row.level, row.offloaded, row.truncated_args, usd(row.cost_usd)]) sentRow.appendChild(el("td", {}, typeof v === "number" ? fmt(v) : v));
    table.appendChild(sentRow);
    $("raw-total").textContent = `${fmt(row.raw_tokens)} tokens (messages ${fmt(rawMessageTokens)}), ${rec.raw_count} messages`;
    $("sent-total").textContent = `${fmt(row.view_tokens)} tokens, ${sentOf(rec).length} messages, level ${row.level || "?"}`;
    const box = $("call-failures");
    box.textContent = "";
    for (const f of rec.failures) box.appendChild(el("div", { class: "badge " + f.kind.replace(" ", "-"), "data-kind": f.kind }, `${f.kind} at this call: ${f.reason}`));
    if (row.after_failed_summary && !rec.failures.length) box.appendChild(el("div", { class: "badge declined" }, "this request is built on an earlier failed or fallback summary"));
  }

  function renderSummaries(run) {
    const box = $("summaries");
    box.textContent = "";
    if (!run.summaries.length) { box.appendChild(el("div", { class: "muted" }, "this run made no summary")); return; }
    let current = -1;
    run.summaries.forEach((s, i) => { if (s.call_index <= state.call) current = i; });
    run.summaries.forEach((s, i) => {
      const div = el("div", { class: "summary" + (i === current ? " current" : "") + (s.failure ? " failure" : ""), "data-call": s.call_index });
      const head = el("div", { class: "muted" });
      if (s.failure) head.appendChild(el("span", { class: "badge failed" }, s.failure.startsWith("fallback") ? "FALLBACK" : "FAILED"));
      head.appendChild(document.createTextNode(`call ${s.call_index}` + (s.cutoff_index === null || s.cutoff_index === undefined ? "" : ` · cutoff ${s.cutoff_index}`) + ` · ${fmt(s.tokens)} tokens` + (s.failure ? " · " + s.failure : "") + (i === current ? " · in effect at this call" : "") + " · "));
      if (s.href) { head.appendChild(el("a", { href: run.base + "/" + s.href, target: "_blank", class: "history" }, "history file")); head.appendChild(document.createTextNode(" · ")); }
      const a = el("a", { href: "#", class: "go" }, "go to call " + s.call_index);
      a.addEventListener("click", (e) => { e.preventDefault(); go(s.call_index); });
      head.appendChild(a);
      div.appendChild(head);
      div.appendChild(marked("pre", { class: "summary-text" }, s.text));
      box.appendChild(div);
    });
  }

  function strip(run) {
    const box = $("call-strip");
    box.textContent = "";
    const frag = document.createDocumentFragment();
    for (const c of run.calls) {
      const kinds = c.failures.map((f) => f.kind);
      const bad = kinds.some((k) => k !== "declined");
      const cls = [c.row.level || "none", bad ? "failed" : kinds.length ? "declined" : "", c.call_index === state.call ? "current" : ""].filter(Boolean).join(" ");
      const title = `call ${c.call_index}: ${c.row.level || ""}` + (kinds.length ? " · " + c.failures.map((f) => f.kind + ": " + f.reason).join("; ") : "");
      const a = el("a", { href: "#", class: cls, "data-call": c.call_index, title }, c.call_index);
      a.addEventListener("click", (e) => { e.preventDefault(); state.call = c.call_index; render(); });
      frag.appendChild(a);
    }
    box.appendChild(frag);
  }

  // Chromium may keep text it first drew with a fallback font when the CJK subset font (loaded
  // lazily, by unicode-range) arrives later: draw the view again once a font has loaded
  if (document.fonts) document.fonts.addEventListener("loadingdone", () => { if (state.run) render(); });

  function render() {
    const run = state.run;
    strip(run);
    const rec = run.byCall.get(state.call);
    $("call-input").value = state.call;
    $("call-slider").max = Math.max(0, run.callIndices.length - 1);
    $("call-slider").value = Math.max(0, run.callIndices.indexOf(state.call));
    $("call-info").textContent = rec ? `call ${state.call} of ${run.calls.length}` : "no calls";
    $("compare-select").value = state.compare ? state.compare.id : "";
    if (rec) {
      const raw = rawMarks(run, rec);
      fill($("raw-view"), run, raw, rec.system);
      fill($("sent-view"), run, sentMarks(run, rec), rec.system);
      parts(run, rec, raw.reduce((t, [i]) => t + run.messages[i].tokens, 0));
      $("events").textContent = rec.events.length ? JSON.stringify(rec.events, null, 2) : "(no compression event at this call)";
    }
    renderSummaries(run);
    const column = $("compare-column");
    if (state.compare) {
      const other = state.compare, orec = other.byCall.get(state.call);
      column.classList.remove("hidden");
      $("compare-title").textContent = `sent view of ${other.strategy}` + (orec ? ` (${fmt(orec.row.view_tokens)} tokens, level ${orec.row.level})` : "");
      if (orec) fill($("compare-view"), other, sentMarks(other, orec), orec.system);
      else { $("compare-view").textContent = ""; $("compare-view").appendChild(el("div", { class: "muted" }, "no such call in this run")); }
    } else {
      column.classList.add("hidden");
      $("compare-view").textContent = "";
    }
    const params = new URLSearchParams({ run: run.id, call: String(state.call) });
    if (state.compare) params.set("compare", state.compare.id);
    history.replaceState(null, "", "#" + params.toString());
  }

  function fail(message) {
    $("title").textContent = "cannot show this run";
    $("problems").textContent = "";
    $("problems").appendChild(el("div", { class: "box problem" }, message));
    document.body.dataset.ready = "error";
  }

  // --- start ---------------------------------------------------------------------------------------------
  $("compare-select").addEventListener("change", (e) => {
    const id = e.target.value;
    if (!id) { state.compare = null; render(); return; }
    load(id).then((other) => { state.compare = other; render(); }, (err) => fail(err.message));
  });
  $("call-input").addEventListener("change", (e) => { state.call = Number(e.target.value); clampCall(); render(); });
  $("call-slider").addEventListener("input", (e) => { state.call = state.run.callIndices[Number(e.target.value)]; render(); });
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  $("changed-only").addEventListener("change", (e) => { state.changedOnly = e.target.checked; render(); });
  let timer = null;
  $("search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 200); });
  $("search").addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(timer); search(); showHit(state.hit + 1); } });
  $("hit-next").addEventListener("click", () => showHit(state.hit + 1));
  $("hit-prev").addEventListener("click", () => showHit(state.hit - 1));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === "ArrowLeft") step(-1);
    if (e.key === "ArrowRight") step(1);
  });

  const hash = new URLSearchParams(location.hash.slice(1));
  const id = hash.get("run");
  if (!id) { fail("no run named: open a run from the index page (inspect.html)"); return; }
  load(id).then((run) => {
    state.run = run;
    header(run);
    state.call = Number(hash.get("call")) || 0;
    clampCall();
    const other = hash.get("compare");
    const started = other && other !== id ? load(other).then((o) => { state.compare = o; }, () => {}) : Promise.resolve();
    return started.then(() => {
      render();
      document.body.dataset.readyMs = String(Math.round(performance.now()));
      document.body.dataset.ready = "true";
    });
  }, (err) => fail(err.message + ": show the run folder again (ctxlab show RUN_DIR)"));
})();
