// ctxlab call inspector: renders the JSON block #data (see ctxlab/analysis/inspector.py).
// No network, no library: plain DOM, text set through textContent (never parsed as HTML).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const runs = data.runs;
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
  const state = { run: 0, compare: -1, call: 0 };

  for (const run of runs) {
    run.byCall = new Map(run.calls.map((c) => [c.call_index, c]));
    run.callIndices = run.calls.map((c) => c.call_index);
  }

  // --- header, overview ---------------------------------------------------------------------
  $("title").textContent = "ctxlab call inspector: " + data.title;
  $("command").textContent = data.command ? "command: " + data.command : "";
  for (const p of data.problems) $("problems").appendChild(el("div", { class: "problem" }, "problem: " + p));

  function totals(run) {
    let raw = 0, sent = 0, l1 = 0, l2 = 0;
    for (const c of run.calls) {
      raw += c.row.raw_tokens || 0;
      sent += c.row.view_tokens || 0;
      if (c.row.level === "L1") l1 += 1;
      if (c.row.level === "L2") l2 += 1;
    }
    return { raw, sent, l1, l2, saving: raw ? (100 * (raw - sent)) / raw : null };
  }

  function overview() {
    const table = $("overview");
    table.textContent = "";
    const transcripts = [...new Set(runs.map((r) => r.transcript))];
    const strategies = [...new Set(runs.map((r) => r.strategy))];
    const head = el("tr");
    head.appendChild(el("th", { class: "name" }, "transcript"));
    for (const s of strategies) head.appendChild(el("th", {}, s));
    table.appendChild(head);
    for (const t of transcripts) {
      const tr = el("tr");
      tr.appendChild(el("td", { class: "name" }, t));
      for (const s of strategies) {
        const i = runs.findIndex((r) => r.transcript === t && r.strategy === s);
        if (i < 0) { tr.appendChild(el("td", {}, "")); continue; }
        const x = totals(runs[i]);
        const saving = x.saving === null ? "" : x.saving.toFixed(1) + " % saved";
        const td = el("td", { class: "cell" + (i === state.run ? " current" : ""), "data-run": i },
          `${runs[i].calls.length} calls · ${saving} · L1 ${x.l1} · L2 ${x.l2}`);
        td.addEventListener("click", () => { state.run = i; state.compare = sameTranscriptOther(i); clampCall(); render(); });
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
  }

  function sameTranscriptOther(i) {
    if (state.compare >= 0 && runs[state.compare].transcript === runs[i].transcript && state.compare !== i) return state.compare;
    return -1;
  }

  // --- controls -------------------------------------------------------------------------------
  const runSelect = $("run-select"), compareSelect = $("compare-select");
  runs.forEach((r, i) => runSelect.appendChild(el("option", { value: i }, `${r.transcript} [${r.strategy}]`)));

  function fillCompare() {
    compareSelect.textContent = "";
    compareSelect.appendChild(el("option", { value: -1 }, "(none)"));
    runs.forEach((r, i) => {
      if (i !== state.run && r.transcript === runs[state.run].transcript) {
        compareSelect.appendChild(el("option", { value: i }, r.strategy));
      }
    });
    compareSelect.value = String(state.compare);
  }

  function clampCall() {
    const idx = runs[state.run].callIndices;
    if (!idx.length) { state.call = 0; return; }
    if (!runs[state.run].byCall.has(state.call)) {
      state.call = idx.reduce((best, k) => (Math.abs(k - state.call) < Math.abs(best - state.call) ? k : best), idx[0]);
    }
  }

  function step(delta) {
    const idx = runs[state.run].callIndices;
    const pos = idx.indexOf(state.call) + delta;
    if (pos >= 0 && pos < idx.length) { state.call = idx[pos]; render(); }
  }

  runSelect.addEventListener("change", () => { state.run = Number(runSelect.value); state.compare = sameTranscriptOther(state.run); clampCall(); render(); });
  compareSelect.addEventListener("change", () => { state.compare = Number(compareSelect.value); render(); });
  $("call-input").addEventListener("change", (e) => { state.call = Number(e.target.value); clampCall(); render(); });
  $("call-slider").addEventListener("input", (e) => { state.call = runs[state.run].callIndices[Number(e.target.value)]; render(); });
  $("prev").addEventListener("click", () => step(-1));
  $("next").addEventListener("click", () => step(1));
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === "ArrowLeft") step(-1);
    if (e.key === "ArrowRight") step(1);
  });

  // --- views ----------------------------------------------------------------------------------
  function messageNode(m, mark, index) {
    const box = el("div", { class: "msg", "data-mark": mark, "data-index": index, "data-role": m.role });
    const head = el("div", { class: "head" });
    head.appendChild(el("span", { class: "role" }, m.role + (m.name ? " " + m.name : "") + (m.status === "error" ? " (error)" : "")));
    head.appendChild(el("span", { class: "tag " + mark }, mark));
    head.appendChild(el("span", { class: "muted" }, fmt(m.tokens) + " tokens"));
    if (m.path) {
      if (m.href) head.appendChild(el("a", { href: m.href, target: "_blank", class: "file" }, m.path));
      else head.appendChild(el("span", { class: "muted" }, m.path + " (file not in this folder)"));
    }
    if (m.id) head.appendChild(el("span", { class: "muted" }, m.id));
    head.addEventListener("click", () => box.classList.toggle("open"));
    box.appendChild(head);
    if (m.text) box.appendChild(el("pre", {}, m.text));
    for (const c of m.calls || []) box.appendChild(el("div", { class: "call" }, "→ " + c.name + "(" + c.args + ")"));
    return box;
  }

  function sentMarks(run, rec) {
    return rec.sent.map((i) => run.messages[i].mark);
  }

  // a sent message whose content differs from the raw message of its id, with no ctxlab mark
  // (another strategy's masking or rewriting), is "changed"
  function renderSent(target, run, rec) {
    target.textContent = "";
    if (!rec) { target.appendChild(el("div", { class: "muted" }, "no such call in this run")); return; }
    if (rec.system !== null && rec.system !== undefined) target.appendChild(messageNode(run.messages[rec.system], "kept", rec.system));
    const raw = new Set(run.raw.slice(0, rec.raw_count));
    rec.sent.forEach((i) => {
      const mark = run.messages[i].mark;
      target.appendChild(messageNode(run.messages[i], mark === "kept" && !raw.has(i) ? "changed" : mark, i));
    });
  }

  function renderRaw(run, rec) {
    const target = $("raw-view");
    target.textContent = "";
    const sent = new Set(rec.sent);
    const byId = new Map();
    for (const i of rec.sent) if (run.messages[i].id) byId.set(run.messages[i].id, i);
    const summarized = sentMarks(run, rec).includes("summary");
    const raw = run.raw.slice(0, rec.raw_count);
    let tokens = 0;
    if (rec.system !== null && rec.system !== undefined) target.appendChild(messageNode(run.messages[rec.system], "kept", rec.system));
    for (const i of raw) {
      const m = run.messages[i];
      tokens += m.tokens;
      let mark;
      if (sent.has(i)) mark = m.mark === "observation" ? "observation" : "kept";
      else if (m.id && byId.has(m.id)) {
        const other = run.messages[byId.get(m.id)].mark;
        mark = other === "kept" ? "changed" : other;
      } else mark = summarized ? "summarized" : "dropped";
      target.appendChild(messageNode(m, mark, i));
    }
    return tokens;
  }

  function parts(run, rec, rawMessageTokens) {
    const table = $("parts");
    table.textContent = "";
    const row = rec.row || {};
    const head = el("tr");
    for (const h of ["tokens", "total", "system + tools", "user", "assistant", "tool", "summary", "messages", "level", "offloaded", "truncated args"]) head.appendChild(el("th", {}, h));
    table.appendChild(head);
    // the raw request's system part: the system message and the tool schemas (what is not messages)
    const rawRoles = { system: (row.raw_tokens || 0) - rawMessageTokens, human: 0, ai: 0, tool: 0 };
    for (const i of run.raw.slice(0, rec.raw_count)) {
      const m = run.messages[i];
      rawRoles[m.role] = (rawRoles[m.role] || 0) + m.tokens;
    }
    const rawRow = el("tr");
    for (const v of ["raw", row.raw_tokens, rawRoles.system, rawRoles.human, rawRoles.ai, rawRoles.tool, 0, rec.raw_count, "", "", ""]) rawRow.appendChild(el("td", {}, typeof v === "number" ? fmt(v) : v));
    table.appendChild(rawRow);
    const sentRow = el("tr");
    for (const v of ["sent", row.view_tokens, row.view_system_tokens, row.view_user_tokens, row.view_assistant_tokens, row.view_tool_tokens, row.view_summary_tokens, rec.sent.length, row.level, row.offloaded, row.truncated_args]) sentRow.appendChild(el("td", {}, typeof v === "number" ? fmt(v) : v));
    table.appendChild(sentRow);
    $("raw-total").textContent = `${fmt(row.raw_tokens)} tokens (messages ${fmt(rawMessageTokens)}), ${rec.raw_count} messages`;
    $("sent-total").textContent = `${fmt(row.view_tokens)} tokens, ${rec.sent.length} messages, level ${row.level || "?"}`;
  }

  function renderSummaries(run) {
    const box = $("summaries");
    box.textContent = "";
    if (!run.summaries.length) { box.appendChild(el("div", { class: "muted" }, "this run made no summary")); return; }
    let current = -1;
    run.summaries.forEach((s, i) => { if (s.call_index <= state.call) current = i; });
    run.summaries.forEach((s, i) => {
      const div = el("div", { class: "summary" + (i === current ? " current" : ""), "data-call": s.call_index });
      const head = el("div", { class: "muted" },
        `call ${s.call_index} · cutoff ${s.cutoff_index} · ${fmt(s.tokens)} tokens` + (s.error ? " · FAILED: " + s.error : "") + (i === current ? " · in effect at this call" : "") + " · ");
      if (s.href) { head.appendChild(el("a", { href: s.href, target: "_blank", class: "history" }, "history file")); head.appendChild(document.createTextNode(" · ")); }
      const go = el("a", { href: "#", class: "go" }, "go to call " + s.call_index);
      go.addEventListener("click", (e) => { e.preventDefault(); state.call = s.call_index; clampCall(); render(); });
      head.appendChild(go);
      div.appendChild(head);
      div.appendChild(el("pre", { class: "summary-text" }, s.text));
      box.appendChild(div);
    });
  }

  function strip(run) {
    const box = $("call-strip");
    box.textContent = "";
    for (const c of run.calls) {
      const a = el("a", { href: "#", class: (c.row.level || "none") + (c.call_index === state.call ? " current" : ""), "data-call": c.call_index, title: `call ${c.call_index}: ${c.row.level || ""}` }, c.call_index);
      a.addEventListener("click", (e) => { e.preventDefault(); state.call = c.call_index; render(); });
      box.appendChild(a);
    }
  }

  function render() {
    const run = runs[state.run];
    runSelect.value = String(state.run);
    fillCompare();
    overview();
    strip(run);
    const rec = run.byCall.get(state.call);
    $("call-input").value = state.call;
    $("call-slider").max = Math.max(0, run.callIndices.length - 1);
    $("call-slider").value = Math.max(0, run.callIndices.indexOf(state.call));
    $("call-info").textContent = rec ? `call ${state.call} of ${run.calls.length} (${run.transcript} [${run.strategy}])` : "no calls";
    if (!rec) return;
    const rawTokens = renderRaw(run, rec);
    renderSent($("sent-view"), run, rec);
    parts(run, rec, rawTokens);
    $("events").textContent = rec.events.length ? JSON.stringify(rec.events, null, 2) : "(no compression event at this call)";
    renderSummaries(run);
    const column = $("compare-column");
    if (state.compare >= 0) {
      const other = runs[state.compare];
      column.classList.remove("hidden");
      const orec = other.byCall.get(state.call);
      $("compare-title").textContent = `sent view of ${other.strategy}` + (orec ? ` (${fmt(orec.row.view_tokens)} tokens, level ${orec.row.level})` : "");
      renderSent($("compare-view"), other, orec);
    } else {
      column.classList.add("hidden");
      $("compare-view").textContent = "";
    }
    history.replaceState(null, "", `#run=${state.run}&call=${state.call}` + (state.compare >= 0 ? `&compare=${state.compare}` : ""));
  }

  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.has("run")) state.run = Math.min(runs.length - 1, Math.max(0, Number(hash.get("run")) || 0));
  if (hash.has("call")) state.call = Number(hash.get("call")) || 0;
  if (hash.has("compare")) state.compare = Number(hash.get("compare"));
  if (runs.length) { clampCall(); render(); }
})();
