// Small SVG plots for the dashboard, written for mlguild (no library, nothing from the network).
// Every text is set with textContent: what a run wrote is shown, never interpreted.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

const PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b"];

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { const d = Math.abs(lo) * 0.05 || 1; lo -= d; hi += d; }
  const raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return { lo, hi, ticks };
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : (+v.toPrecision(5)).toString();
}

// series: [{name, color, kind: "scatter"|"step"|"line", points: [[x, y, label?], ...], dash}]
// opts: {width, height, xlabel, ylabel, hlines: [{y, label, color}]}
function linePlot(series, opts) {
  const W = opts.width || 560, H = opts.height || 240, L = 58, R = 12, T = 12, B = 34;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot", width: "100%", role: "img" });
  const xs = [], ys = [];
  for (const s of series) for (const p of s.points) { xs.push(p[0]); ys.push(p[1]); }
  for (const h of opts.hlines || []) if (h.y !== null && h.y !== undefined) ys.push(h.y);
  if (!xs.length) { svg.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "nothing yet")); return svg; }
  const X = niceTicks(Math.min(...xs), Math.max(...xs), 6), Y = niceTicks(Math.min(...ys), Math.max(...ys), 5);
  const sx = x => L + (x - X.lo) / (X.hi - X.lo) * (W - L - R);
  const sy = y => H - B - (y - Y.lo) / (Y.hi - Y.lo) * (H - T - B);
  svg.appendChild(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  svg.appendChild(svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
  for (const t of X.ticks) svg.appendChild(svgEl("text", { x: sx(t), y: H - B + 13, "text-anchor": "middle" }, fmt(t)));
  for (const t of Y.ticks) {
    svg.appendChild(svgEl("line", { x1: L, y1: sy(t), x2: W - R, y2: sy(t), stroke: "#f1f5f9" }));
    svg.appendChild(svgEl("text", { x: L - 5, y: sy(t) + 3, "text-anchor": "end" }, fmt(t)));
  }
  if (opts.xlabel) svg.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, opts.xlabel));
  if (opts.ylabel) svg.appendChild(svgEl("text", { x: 12, y: (T + H - B) / 2, transform: `rotate(-90 12 ${(T + H - B) / 2})`, "text-anchor": "middle" }, opts.ylabel));
  for (const h of opts.hlines || []) {
    if (h.y === null || h.y === undefined) continue;
    svg.appendChild(svgEl("line", { x1: L, y1: sy(h.y), x2: W - R, y2: sy(h.y), stroke: h.color || "#a0aec0", "stroke-dasharray": "5 4" }));
    svg.appendChild(svgEl("text", { x: W - R - 2, y: sy(h.y) - 3, "text-anchor": "end" }, h.label || ""));
  }
  series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    if (s.kind === "scatter") {
      const g = svgEl("g", { "data-series": s.name });
      for (const p of s.points) {
        const c = svgEl("circle", { cx: sx(p[0]), cy: sy(p[1]), r: 3, fill: color, "fill-opacity": 0.75 });
        if (p[2]) c.appendChild(svgEl("title", {}, p[2]));
        g.appendChild(c);
      }
      svg.appendChild(g);
    } else if (s.points.length) {
      let d = "";
      s.points.forEach((p, k) => {
        if (k === 0) d += `M${sx(p[0])},${sy(p[1])}`;
        else if (s.kind === "step") d += `H${sx(p[0])}V${sy(p[1])}`;
        else d += `L${sx(p[0])},${sy(p[1])}`;
      });
      if (s.kind === "step" && s.extendTo !== undefined) d += `H${sx(s.extendTo)}`;
      svg.appendChild(svgEl("path", { d, fill: "none", stroke: color, "stroke-width": 2, "stroke-dasharray": s.dash || "" }));
    }
  });
  return svg;
}

// bars: [[label, value], ...]
function barPlot(bars, opts) {
  const W = (opts && opts.width) || 420, row = 22, L = 130, R = 40;
  const H = Math.max(40, bars.length * row + 10);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot", width: "100%", role: "img" });
  if (!bars.length) { svg.appendChild(svgEl("text", { x: W / 2, y: 24, "text-anchor": "middle" }, (opts && opts.empty) || "none")); return svg; }
  const max = Math.max(...bars.map(b => b[1]));
  bars.forEach(([label, value], i) => {
    const y = 5 + i * row, w = (W - L - R) * value / max;
    svg.appendChild(svgEl("text", { x: L - 6, y: y + 14, "text-anchor": "end" }, label));
    svg.appendChild(svgEl("rect", { x: L, y: y + 3, width: Math.max(1, w), height: row - 8, fill: (opts && opts.color) || "#e45756", rx: 2 }));
    svg.appendChild(svgEl("text", { x: L + w + 4, y: y + 14 }, String(value)));
  });
  return svg;
}
