// The search graph as SVG, written for mlguild: a tidy tree along each node's first parent
// (drafts and fuses start rows of their own), the other parents of a fuse or blend drawn
// dashed, edges labelled by the child's operation, the best lineage in gold. Drag to pan,
// wheel to zoom; a click on a node calls onPick(id).
"use strict";

const STATUS_COLOR = { scored: "#54a24b", pending: "#eeca3b", final: "#4c78a8", explored: "#b279a2" };
const FAIL_COLOR = "#e45756";
const DX = 210, DY = 26;

function layoutGraph(nodes) {
  const byId = new Map(nodes.map(n => [n.id, n]));
  const kids = new Map(), roots = [];
  for (const n of nodes) {
    const p = n.parents.find(id => byId.has(id));
    if (p === undefined) roots.push(n);
    else { if (!kids.has(p)) kids.set(p, []); kids.get(p).push(n); }
  }
  const pos = new Map();
  let row = 0;
  // Iterative post-order walk: a chain of thousands of nodes must not overflow the stack.
  for (const root of roots) {
    const stack = [[root, 0, false]];
    while (stack.length) {
      const [n, depth, done] = stack.pop();
      const ch = kids.get(n.id) || [];
      if (!ch.length) { pos.set(n.id, { x: depth, y: row++ }); continue; }
      if (done) {
        const ys = ch.map(c => pos.get(c.id).y);
        pos.set(n.id, { x: depth, y: (Math.min(...ys) + Math.max(...ys)) / 2 });
        continue;
      }
      stack.push([n, depth, true]);
      for (let i = ch.length - 1; i >= 0; i--) stack.push([ch[i], depth + 1, false]);
    }
  }
  return { pos, rows: row, depth: Math.max(0, ...[...pos.values()].map(p => p.x)) };
}

function scoreColor(t) {
  // t in [0, 1], 1 = best: from a muted red through amber to green.
  const stops = [[214, 96, 77], [244, 165, 66], [166, 217, 106], [26, 152, 80]];
  const k = Math.min(stops.length - 2, Math.floor(t * (stops.length - 1)));
  const f = t * (stops.length - 1) - k, a = stops[k], b = stops[k + 1];
  return `rgb(${a.map((v, i) => Math.round(v + (b[i] - v) * f)).join(",")})`;
}

function nodeFill(n, mode, range, direction) {
  const failed = !(n.status in STATUS_COLOR);
  if (mode === "worker") return PALETTE[(n.worker - 1) % PALETTE.length];
  if (failed) return FAIL_COLOR;
  if (mode === "score" && n.score !== null && range) {
    let t = range[1] > range[0] ? (n.score - range[0]) / (range[1] - range[0]) : 1;
    if (direction === "minimize") t = 1 - t;
    return scoreColor(t);
  }
  return STATUS_COLOR[n.status];
}

function drawGraph(box, run, state, onPick) {
  const nodes = run.nodes, { pos, rows, depth } = layoutGraph(nodes);
  const lineage = new Set(run.lineage);
  const scores = nodes.filter(n => n.score !== null && n.status === "scored").map(n => n.score);
  const range = scores.length ? [Math.min(...scores), Math.max(...scores)] : null;
  const width = (depth + 1) * DX + 200, height = Math.max(1, rows) * DY + 40;
  const svg = svgEl("svg", { id: "graph", "data-nodes": nodes.length });
  // First view: one unit a pixel from the top left (a small graph is not blown up, a big one
  // starts readable; the wheel zooms out to the whole).
  const bw = box.clientWidth || 1200, bh = box.clientHeight || 560;
  let view = state.view || [0, 0, bw, bh];
  if (view === "fit") {  // the whole graph, its aspect kept
    const k = Math.max(width / bw, height / bh, 1);
    view = [0, 0, bw * k, bh * k];
    state.view = view;
  }
  svg.setAttribute("viewBox", view.join(" "));
  const edges = svgEl("g", { class: "edges" }), labels = svgEl("g", { class: "edge-labels" }), dots = svgEl("g", { class: "nodes" });
  const at = id => { const p = pos.get(id); return [40 + p.x * DX, 20 + p.y * DY]; };
  for (const n of nodes) {
    const [x2, y2] = at(n.id);
    n.parents.forEach((p, k) => {
      if (!pos.has(p)) return;
      const [x1, y1] = at(p), gold = lineage.has(p) && lineage.has(n.id);
      const mid = (x1 + x2) / 2;
      edges.appendChild(svgEl("path", {
        d: `M${x1},${y1}C${mid},${y1} ${mid},${y2} ${x2},${y2}`, fill: "none",
        stroke: gold ? "#d4a017" : "#cbd5e1", "stroke-width": gold ? 3 : 1.2, "stroke-dasharray": k > 0 ? "4 3" : "",
        class: gold ? "edge lineage" : "edge", "data-from": p, "data-to": n.id,
      }));
      if (k === 0) labels.appendChild(svgEl("text", { x: mid, y: (y1 + y2) / 2 - 3, "text-anchor": "middle", class: "edge-op" }, n.op));
    });
  }
  for (const n of nodes) {
    const [x, y] = at(n.id);
    const g = svgEl("g", { class: "node", "data-id": n.id, "data-status": n.status, transform: `translate(${x},${y})` });
    const best = n.id === run.best?.id;
    g.appendChild(svgEl("circle", {
      r: best ? 9 : 7, fill: nodeFill(n, state.mode, range, run.direction),
      stroke: lineage.has(n.id) ? "#d4a017" : PALETTE[(n.worker - 1) % PALETTE.length], "stroke-width": lineage.has(n.id) ? 3 : 2,
    }));
    if (n.status === "pending") g.appendChild(svgEl("circle", { r: 11, fill: "none", stroke: "#eeca3b", "stroke-dasharray": "3 2" }));
    const title = n.title.length > 28 ? n.title.slice(0, 27) + "…" : n.title;
    g.appendChild(svgEl("text", { x: 12, y: 4 }, `${n.id} ${title}${best ? " ★" : ""}`));
    g.appendChild(svgEl("title", {}, `${n.id} · ${n.op} · ${n.status}${n.score !== null ? " · " + fmt(n.score) + (n.holdout_score !== null && n.holdout_score !== undefined ? " pooled" : "") : ""} · worker ${n.worker}\n${n.title}${n.failure ? "\n" + n.failure : ""}`));
    g.addEventListener("click", ev => { if (!state.dragged) onPick(n.id); ev.stopPropagation(); });
    dots.appendChild(g);
  }
  svg.append(edges, labels, dots);
  // Pan and zoom by the view box, kept in state so a live redraw keeps the user's view.
  let drag = null;
  svg.addEventListener("mousedown", ev => { drag = [ev.clientX, ev.clientY, ...view]; state.dragged = false; });
  svg.addEventListener("mouseup", () => { drag = null; });
  svg.addEventListener("mouseleave", () => { drag = null; });
  svg.addEventListener("mousemove", ev => {
    if (!drag) return;
    const k = view[2] / svg.clientWidth, dx = (ev.clientX - drag[0]) * k, dy = (ev.clientY - drag[1]) * k;
    if (Math.abs(dx) + Math.abs(dy) > 2) state.dragged = true;
    view[0] = drag[2] - dx; view[1] = drag[3] - dy; svg.setAttribute("viewBox", view.join(" ")); state.view = view;
  });
  svg.addEventListener("wheel", ev => {
    ev.preventDefault();
    const f = ev.deltaY > 0 ? 1.15 : 1 / 1.15, r = svg.getBoundingClientRect();
    const px = view[0] + (ev.clientX - r.left) / r.width * view[2], py = view[1] + (ev.clientY - r.top) / r.height * view[3];
    view[2] *= f; view[3] *= f; view[0] = px - (px - view[0]) * f; view[1] = py - (py - view[1]) * f;
    svg.setAttribute("viewBox", view.join(" ")); state.view = view;
  }, { passive: false });
  box.replaceChildren(svg);
  return { width, height };
}
