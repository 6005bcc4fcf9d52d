// The mlguild dashboard: a page per view, chosen by the URL's hash (#/, #/run/ID,
// #/run/ID/node/NID), fed by the server's JSON. While a run or the runs list is shown it
// polls the journal's version and redraws when the journal grows: no reload.
"use strict";

const app = document.getElementById("app");
const POLL_MS = 500;
let poll = null; // {key, version, refresh}
const graphState = { mode: "score", view: null, run: null };

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") el.addEventListener("click", v);
    else if (v !== null && v !== undefined && v !== false) el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  return el;
}

async function api(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

function clock(s) {
  if (s === null || s === undefined) return "∞";
  s = Math.max(0, Math.round(s));
  const hh = Math.floor(s / 3600), mm = Math.floor(s % 3600 / 60), ss = s % 60;
  return hh ? `${hh}:${String(mm).padStart(2, "0")}:${String(ss).padStart(2, "0")}` : `${mm}:${String(ss).padStart(2, "0")}`;
}

function pill(status) {
  const cls = status === "scored" || status === "final" || status === "explored" ? "scored" : status === "pending" ? "pending" : "fail";
  return h("span", { class: `pill ${cls}` }, status);
}

function budgetText(b) {
  const parts = [`${clock(b.spent_s)} of ${clock(b.time_s)}`, `${b.nodes}${b.iterations ? " of " + b.iterations : ""} nodes`];
  if (b.tokens) parts.push(`${b.tokens.toLocaleString()} tokens`);
  if (b.cost_usd) parts.push(`$${b.cost_usd.toFixed(4)}`);
  return parts.join(" · ");
}

function crumbs(...items) {
  const c = document.getElementById("crumbs");
  c.replaceChildren(...items.flatMap(([label, href]) => [" / ", href ? h("a", { href }, label) : h("span", {}, label)]));
}

function startPolling(key, versionUrl, version, refresh) {
  poll = { key, versionUrl, version, refresh };
  document.getElementById("live").textContent = "● live";
}

async function tick() {
  const p = poll;
  if (!p || !p.versionUrl) return;
  try {
    const v = (await api(p.versionUrl)).version;
    if (poll === p && v !== p.version) { p.version = v; await p.refresh(); }
  } catch (e) { document.getElementById("live").textContent = "○ offline"; }
}
setInterval(tick, POLL_MS);

// ------------------------------------------------------------------ the runs list
async function runsPage() {
  crumbs(["runs", null]);
  const draw = async () => {
    const runs = await api("/api/runs");
    const rows = runs.map(r => h("tr", { "data-run": r.id },
      h("td", {}, h("a", { href: `#/run/${encodeURIComponent(r.id)}` }, r.id)),
      h("td", {}, r.task), h("td", {}, r.brain), h("td", {}, budgetText(r.budget)),
      h("td", { class: "num" }, r.best ? `${fmt(r.best.score)}${r.best.pooled ? " pooled" : ""} (${r.best.id})` : "—"),
      h("td", { class: "num" }, r.final_score !== null && r.final_score !== undefined ? fmt(r.final_score) : "—"),
      h("td", { class: "num" }, fmt(r.floor)),
      h("td", {}, r.stopped || "running or killed")));
    app.replaceChildren(h("h1", {}, "Runs"), h("div", { class: "card" }, runs.length ? h("table", { id: "runs-table" },
      h("thead", {}, h("tr", {}, ["run", "task", "brain", "budget used", "best holdout", "final (test)", "floor", "last stop"].map(t => h("th", {}, t)))),
      h("tbody", {}, rows)) : h("p", { class: "muted" }, "No runs in this folder yet: start one with `mlguild run example:churn --time 3m`.")));
    return runs.map(r => r.version).join(",");
  };
  const version = await draw();
  // The list has no single journal: it is refreshed on a slower beat, by its own fingerprint.
  poll = { key: "runs", versionUrl: null };
  document.getElementById("live").textContent = "● live";
  let last = version;
  const timer = setInterval(async () => {
    if (location.hash.replace(/^#\/?/, "") !== "") { clearInterval(timer); return; }
    const runs = await api("/api/runs");
    const v = runs.map(r => r.version).join(",");
    if (v !== last) { last = v; await draw(); }
  }, 1500);
}

// ------------------------------------------------------------------ one run
function scorePlot(run) {
  const t0 = run.started || 0, min = ts => (ts - t0) / 60;
  const byWorker = new Map();
  for (const n of run.nodes) {
    if (n.status !== "scored" || n.score === null || !n.finished) continue;
    if (!byWorker.has(n.worker)) byWorker.set(n.worker, []);
    byWorker.get(n.worker).push([min(n.finished), n.score, `${n.id} ${n.title}`]);
  }
  const series = [...byWorker.entries()].sort((a, b) => a[0] - b[0])
    .map(([w, pts]) => ({ name: `worker ${w}`, kind: "scatter", points: pts, color: PALETTE[(w - 1) % PALETTE.length] }));
  const best = run.best_changes.filter(b => b.score !== null).map(b => [min(b.ts), b.score]);
  const last = Math.max(0, ...run.nodes.filter(n => n.finished).map(n => min(n.finished)));
  series.push({ name: "best so far", kind: "step", points: best, color: "#d4a017", extendTo: last });
  const svg = linePlot(series, { xlabel: "minutes", ylabel: `holdout ${run.metric}`, hlines: [{ y: run.floor, label: "floor" }] });
  svg.id = "score-plot";
  const legend = h("div", { class: "legend" }, series.map(s => h("span", {}, h("i", { style: `background:${s.color}` }), s.name)), h("span", {}, "– – floor"));
  return [svg, legend];
}

function llmPlot(run) {
  const t0 = run.started || 0;
  let tokens = 0, cost = 0;
  const tk = [], cs = [];
  for (const c of run.llm) { tokens += c.tokens; cost += c.cost_usd; tk.push([(c.ts - t0) / 60, tokens]); cs.push([(c.ts - t0) / 60, cost]); }
  if (!run.llm.length) return [h("p", { class: "muted" }, "No LLM calls in this run.")];
  return [h("p", { id: "llm-summary" }, `${run.llm.length} calls · ${tokens.toLocaleString()} tokens · $${cost.toFixed(4)}`),
    linePlot([{ name: "tokens", kind: "line", points: tk }], { xlabel: "minutes", ylabel: "tokens (cumulative)", height: 180 }),
    linePlot([{ name: "cost", kind: "line", points: cs, color: "#e45756" }], { xlabel: "minutes", ylabel: "USD (cumulative)", height: 180 })];
}

// A node ranked by the pooled score of a small holdout (holdout and out-of-fold rows) has its holdout score apart.
const isPooled = n => n.holdout_score !== null && n.holdout_score !== undefined;

function topTable(run, rid, k) {
  const sign = run.direction === "minimize" ? 1 : -1;
  const top = run.nodes.filter(n => n.status === "scored" && n.score !== null).sort((a, b) => sign * (a.score - b.score)).slice(0, k);
  return h("table", { id: "top-table" }, h("thead", {}, h("tr", {}, ["node", "title", "op", "worker", "holdout", "run s"].map(t => h("th", {}, t)))),
    h("tbody", {}, top.map(n => h("tr", { class: n.id === run.best?.id ? "best" : null },
      h("td", {}, h("a", { href: `#/run/${encodeURIComponent(rid)}/node/${n.id}` }, n.id)), h("td", {}, n.title), h("td", {}, n.op),
      h("td", {}, n.worker), h("td", { class: "num" }, fmt(n.score) + (isPooled(n) ? " (pooled)" : "")), h("td", { class: "num" }, fmt(n.exec_s))))));
}

function workersCard(run) {
  return run.workers.map(w => {
    const mine = run.nodes.filter(n => n.worker === w);
    const now = mine.filter(n => n.status === "pending").map(n => `${n.op} ${n.id}: ${n.title}`);
    return h("div", { class: "worker", "data-worker": w }, h("i", { style: `display:inline-block;width:10px;height:10px;border-radius:50%;background:${PALETTE[(w - 1) % PALETTE.length]}` }),
      ` worker ${w}: ${mine.length} nodes · `, now.length ? now.join("; ") : "idle");
  });
}

async function poolsCard(rid) {
  const p = await api(`/api/runs/${encodeURIComponent(rid)}/pools`);
  const ideas = p.ideas.map(i => h("tr", {}, h("td", {}, i.text), h("td", {}, i.origin),
    h("td", {}, (i.sources || []).map(s => `${s.item}${s.votes ? " (" + s.votes + " votes)" : ""}`).join(", ")),
    h("td", {}, (i.trials || []).map(t => `${t.node} ${t.outcome}`).join(", ") || "—")));
  const reports = p.reports.map(r => h("tr", {}, h("td", {}, h("a", { href: `#/run/${encodeURIComponent(rid)}/node/${r.node}` }, r.node)),
    h("td", {}, r.outcome), h("td", { class: "num" }, fmt(r.score)), h("td", {}, r.method), h("td", {}, r.helped)));
  return [h("h2", {}, `Ideas (${ideas.length})`), ideas.length ? h("table", { id: "ideas-table" }, h("thead", {}, h("tr", {}, ["idea", "origin", "sources", "tried here"].map(t => h("th", {}, t)))), h("tbody", {}, ideas)) : h("p", { class: "muted" }, "no ideas"),
    h("h2", {}, `Reports (${reports.length})`), reports.length ? h("table", { id: "reports-table" }, h("thead", {}, h("tr", {}, ["node", "outcome", "holdout", "method", "what it did"].map(t => h("th", {}, t)))), h("tbody", {}, reports)) : h("p", { class: "muted" }, "no reports")];
}

async function runPage(rid) {
  crumbs(["runs", "#/"], [rid, null]);
  if (graphState.run !== rid) { graphState.run = rid; graphState.view = null; }
  const graphBox = h("div", { id: "graph-box" });
  const parts = { head: h("div", { class: "card", id: "run-head" }), graph: graphBox, score: h("div", {}), fail: h("div", {}), llm: h("div", {}), top: h("div", {}), workers: h("div", { id: "workers" }), pools: h("div", { id: "pools" }) };
  const mode = h("select", { id: "color-mode" }, ["score", "status", "worker"].map(m => h("option", { value: m }, `colour by ${m}`)));
  mode.value = graphState.mode;
  let run = null;
  const pick = id => { location.hash = `#/run/${encodeURIComponent(rid)}/node/${id}`; };
  mode.addEventListener("change", () => { graphState.mode = mode.value; drawGraph(graphBox, run, graphState, pick); });
  const fit = h("button", { id: "fit", type: "button", title: "show the whole graph" }, "fit");
  fit.addEventListener("click", () => { graphState.view = "fit"; drawGraph(graphBox, run, graphState, pick); });
  app.replaceChildren(h("h1", {}, rid), parts.head,
    h("div", { class: "card" }, h("div", { class: "graph-tools" }, h("strong", {}, "Search graph"), mode, fit,
      h("span", { class: "legend" }, Object.entries(STATUS_COLOR).map(([k, c]) => h("span", {}, h("i", { style: `background:${c}` }), k)), h("span", {}, h("i", { style: `background:${FAIL_COLOR}` }), "failed"), h("span", {}, h("i", { style: "background:#d4a017" }), "best lineage"), h("span", {}, "ring: worker · dashed edge: another parent · drag to pan, wheel to zoom"))), graphBox, parts.workers),
    h("div", { class: "grid" }, h("div", { class: "card" }, h("h2", {}, "Score over time"), parts.score), h("div", { class: "card" }, h("h2", {}, "Failures by class"), parts.fail)),
    h("div", { class: "grid" }, h("div", { class: "card" }, h("h2", {}, "Top nodes"), parts.top), h("div", { class: "card" }, h("h2", {}, "LLM calls, tokens and cost"), parts.llm)),
    h("div", { class: "card" }, parts.pools));
  const refresh = async () => {
    run = await api(`/api/runs/${encodeURIComponent(rid)}`);
    const b = run.budget;
    parts.head.replaceChildren(h("dl", { class: "kv" },
      h("dt", {}, "task"), h("dd", {}, `${run.task} (${run.metric}, ${run.direction})`), h("dt", {}, "brain"), h("dd", {}, run.brain),
      h("dt", {}, "budget used"), h("dd", {}, budgetText(b)),
      h("dt", {}, "best"), h("dd", {}, run.best ? h("a", { href: `#/run/${encodeURIComponent(rid)}/node/${run.best.id}` }, `${run.best.id} ${fmt(run.best.score)}${run.best.pooled ? " (pooled)" : ""}: ${run.best.title}`) : "—"),
      h("dt", {}, "floor"), h("dd", {}, fmt(run.floor)),
      h("dt", {}, "final"), h("dd", {}, run.final ? `${run.final.node}: ${run.final.reason}` : "—"),
      h("dt", {}, "test grade"), h("dd", {}, run.final_score !== null && run.final_score !== undefined ? fmt(run.final_score) : "—"),
      h("dt", {}, "report"), h("dd", {}, h("a", { href: `/runs/${encodeURIComponent(rid)}/files/report.html`, target: "_blank" }, "report.html")),
      h("dt", {}, "last stop"), h("dd", {}, run.stopped || "running or killed")));
    drawGraph(graphBox, run, graphState, pick);
    await new Promise(resolve => setTimeout(resolve, 0)); // the graph is painted before the rest is built
    parts.workers.replaceChildren(...workersCard(run));
    parts.score.replaceChildren(...scorePlot(run));
    parts.fail.replaceChildren(barPlot(Object.entries(run.failures), { empty: "no failures" }));
    parts.llm.replaceChildren(...llmPlot(run));
    parts.top.replaceChildren(topTable(run, rid, 10));
    parts.pools.replaceChildren(...await poolsCard(rid));
    app.setAttribute("data-version", run.version);
  };
  await refresh();
  startPolling(`run:${rid}`, `/api/runs/${encodeURIComponent(rid)}/version`, run.version, refresh);
}

// ------------------------------------------------------------------ one node
function diffBlock(text) {
  return h("pre", { class: "diff" }, text.split("\n").map(line => h("span", {
    class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : null,
  }, line + "\n")));
}

async function nodePage(rid, nid) {
  crumbs(["runs", "#/"], [rid, `#/run/${encodeURIComponent(rid)}`], [nid, null]);
  let shown = "";
  const draw = async () => {
    const n = await api(`/api/runs/${encodeURIComponent(rid)}/nodes/${encodeURIComponent(nid)}`);
    // Another node's record changes nothing here: redraw (and lose the scroll) only for this one's.
    const text = JSON.stringify(n);
    if (text === shown) return;
    shown = text;
    const link = id => h("a", { href: `#/run/${encodeURIComponent(rid)}/node/${id}` }, id);
    const t = n.timing || {};
    app.replaceChildren(h("div", { id: "node-page", "data-id": n.id },
      h("h1", {}, `${n.id}: ${n.title}`, n.is_best ? " ★" : ""),
      h("div", { class: "card" }, h("dl", { class: "kv" },
        h("dt", {}, "operation"), h("dd", {}, n.op, n.parents.length ? [" of ", ...n.parents.flatMap((p, i) => i ? [", ", link(p)] : [link(p)])] : ""),
        h("dt", {}, "status"), h("dd", {}, pill(n.status), n.failure ? ` ${n.failure}` : ""),
        ...(isPooled(n) ? [
          h("dt", {}, "pooled score"), h("dd", { id: "pooled-score" }, fmt(n.score), " (holdout and out-of-fold, weighted by their rows: how the search ranks nodes on a small holdout)"),
          h("dt", {}, "holdout score"), h("dd", {}, fmt(n.holdout_score), " (harness, sealed labels)"),
        ] : [h("dt", {}, "holdout score"), h("dd", {}, fmt(n.score), " (harness, sealed labels)")]),
        h("dt", {}, "confirmation"), h("dd", {}, n.confirmations.length ? n.confirmations.map(fmt).join(", ") + " (re-runs with other seeds)" : "—"),
        h("dt", {}, "public score"), h("dd", {}, n.public_score !== null && n.public_score !== undefined ? fmt(n.public_score) : "—"),
        h("dt", {}, "printed (untrusted)"), h("dd", {}, fmt(n.printed_score)),
        h("dt", {}, "worker"), h("dd", {}, n.worker),
        h("dt", {}, "timings"), h("dd", {}, `script ${fmt(t.exec_s)} s of ${fmt(t.budget_s)} s · brain ${fmt(t.brain_s)} s · harness ${fmt(t.harness_s)} s`),
        h("dt", {}, "LLM cost"), h("dd", {}, `${n.tokens.toLocaleString()} tokens · $${(n.cost_usd || 0).toFixed(4)}`),
        h("dt", {}, "children"), h("dd", {}, n.children.length ? n.children.flatMap((c, i) => i ? [", ", link(c)] : [link(c)]) : "—"))),
      h("div", { class: "card" }, h("h2", {}, "Plan"), h("pre", { class: "text", id: "plan" }, n.plan)),
      h("div", { class: "card", id: "diffs" }, h("h2", {}, "Diff against each parent"),
        n.diffs.length ? n.diffs.map(d => [h("h3", {}, `against ${d.parent}`), diffBlock(d.diff || "(no change)")]) : h("p", { class: "muted" }, "a root node: no parent to compare with")),
      h("div", { class: "card" }, h("h2", {}, "solution.py"), h("pre", { id: "code" }, n.code)),
      n.recall.length ? h("div", { class: "card", id: "recall" }, h("h2", {}, "Memory records its brain was shown"), h("ul", {}, n.recall.map(r => h("li", {}, r)))) : null,
      n.failure_full ? h("div", { class: "card" }, h("h2", {}, `Failure: ${n.status}`), h("pre", {}, n.failure_full)) : null,
      h("div", { class: "card" }, h("h2", {}, "stdout (tail)"), h("pre", {}, n.stdout || "(empty)"), h("h2", {}, "stderr (tail)"), h("pre", {}, n.stderr || "(empty)")),
      n.importance && n.importance.length ? h("div", { class: "card", id: "importance" }, h("h2", {}, "Feature importance (output/importance.csv, largest first)"), barPlot(n.importance, { empty: "none" })) : null,
      n.report ? h("div", { class: "card" }, h("h2", {}, "report.md"), h("pre", { class: "text" }, n.report)) : null));
  };
  await draw();
  const run = await api(`/api/runs/${encodeURIComponent(rid)}/version`);
  startPolling(`node:${rid}:${nid}`, `/api/runs/${encodeURIComponent(rid)}/version`, run.version, draw);
}

// ------------------------------------------------------------------ routing
async function route() {
  poll = null;
  document.getElementById("live").textContent = "";
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts.length >= 4 && parts[2] === "node") await nodePage(parts[1], parts[3]);
    else if (parts[0] === "run" && parts[1]) await runPage(parts[1]);
    else await runsPage();
  } catch (e) {
    app.replaceChildren(h("h1", {}, "Not found"), h("p", { class: "muted" }, String(e.message || e)));
  }
}
window.addEventListener("hashchange", route);
route();
