// taskflow monitor: the node charts (CPU %, memory GB, GPU % where the node has one, each
// with its axes, over the run's time) and the Gantt chart of the slots.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function niceStep(span, n) {
  const raw = span / Math.max(n, 1), mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

function secs(v) { return v >= 120 ? +(v / 60).toFixed(1) + " min" : +v.toFixed(v < 1 ? 2 : 1) + " s"; }

// one small chart: pts [[t, v]] from t0 to t1, y from 0 to yMax, labelled axes
function lineChart(title, unit, cls, colour, pts, t0, t1, yMax, width) {
  const h = 104, l = 40, r = 8, top = 24, bottom = 20;
  const svg = el("svg", {width: width, height: h, class: "load " + cls, "data-span": (t1 - t0).toFixed(3)});
  el("text", {x: 4, y: 12, "font-weight": "bold"}, svg, title + " (" + unit + ")");
  const x = (t) => l + (t - t0) / Math.max(t1 - t0, 1e-6) * (width - l - r);
  const y = (v) => h - bottom - Math.min(v, yMax) / yMax * (h - bottom - top);
  for (const f of [0, 0.5, 1]) {
    const v = yMax * f;
    el("line", {x1: l, x2: width - r, y1: y(v), y2: y(v), stroke: f ? "#eee" : "#999"}, svg);
    el("text", {x: l - 4, y: y(v) + 3, "text-anchor": "end"}, svg,
       (v >= 10 || v === 0 ? Math.round(v) : v.toFixed(1)) + (f === 1 ? " " + unit : ""));
  }
  const step = niceStep(t1 - t0, 4);
  for (let t = 0; t <= t1 - t0 + 1e-9; t += step) {
    el("line", {x1: x(t0 + t), x2: x(t0 + t), y1: h - bottom, y2: h - bottom + 3, stroke: "#999"}, svg);
    el("text", {x: x(t0 + t), y: h - 6, "text-anchor": "middle", class: "tick", "data-t": t.toFixed(3)}, svg, secs(t));
  }
  if (pts.length) {
    const p = pts.map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1));
    if (p.length === 1) p.push((width - r) + "," + p[0].split(",")[1]);
    el("polyline", {points: p.join(" "), fill: "none", stroke: colour, "stroke-width": 1.5,
                    class: "series-" + cls}, svg);
  } else {
    el("text", {x: l + 8, y: h / 2, fill: "#888"}, svg, "no samples yet (a node reports every 2 s)");
  }
  return svg;
}

function drawNodes(M) {
  const box = document.getElementById("nodes"); box.textContent = "";
  const width = Math.max(220, Math.min(box.clientWidth - 4, 560));
  const t0 = M.run && M.run.t_start ? M.run.t_start : null;
  // a run that is over is drawn over its own span, however long after it the page is opened
  const over = M.run && M.run.state !== "running" && M.run.t_end;
  const t1 = over ? M.run.t_end : Math.max(M.now, M.run && M.run.t_end ? M.run.t_end : 0);
  for (const n of M.nodes) {
    const div = document.createElement("div"); div.className = "node"; div.dataset.node = n.name;
    const s = M.samples.get(n.name) || [];
    const last = s[s.length - 1];
    const gb = n.info && n.info.memory_gb ? n.info.memory_gb : null;
    div.textContent = n.name + " — " + (n.slots || "?") + " slots" + (gb ? ", " + gb.toFixed(1) + " GB" : "") +
      (n.t_lost ? " (left: " + (n.reason || "") + ")" : "") +
      (last ? " — now cpu " + Math.round(last.cpu || 0) + " %, memory " +
              (gb ? (last.mem * gb / 100).toFixed(1) + " GB" : Math.round(last.mem || 0) + " %") +
              (last.gpu != null ? ", gpu " + Math.round(last.gpu) + " %" : "") : "");
    const charts = document.createElement("div"); charts.className = "charts";
    const a = t0 || (s.length ? s[0].t : 0);
    const b = over ? Math.max(t1, a + 0.1) : Math.max(t1, s.length ? s[s.length - 1].t : 0, a + 1);
    const pick = (k, f) => s.filter((x) => x[k] != null && (!over || x.t <= b)).map((x) => [x.t, f(x[k])]);
    const w = s.some((x) => x.gpu != null) ? Math.floor((width - 8) / 3) : Math.floor((width - 4) / 2);
    charts.appendChild(lineChart("CPU", "%", "cpu", "#3182bd", pick("cpu", (v) => v), a, b, 100, w));
    if (gb) charts.appendChild(lineChart("memory", "GB", "mem", "#e6550d", pick("mem", (v) => v * gb / 100), a, b, gb, w));
    else charts.appendChild(lineChart("memory", "%", "mem", "#e6550d", pick("mem", (v) => v), a, b, 100, w));
    if (s.some((x) => x.gpu != null))       // only a node that has a GPU gets its chart
      charts.appendChild(lineChart("GPU", "%", "gpu", "#31a354", pick("gpu", (v) => v), a, b, 100, w));
    div.appendChild(charts); box.appendChild(div);
  }
}

const GANTT_BARS = 3000;   // the most recent tasks drawn; a larger run says so

function drawGantt(M, select) {
  const svg = document.getElementById("gantt");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  let ran = [...M.tasks.values()].filter((t) => t.t_start).sort((a, b) => a.t_start - b.t_start || a.id - b.id);
  const cut = ran.length > GANTT_BARS ? ran.length - GANTT_BARS : 0;
  if (cut) ran = ran.slice(cut);
  document.getElementById("gantt-note").textContent = cut ?
    "(the " + GANTT_BARS + " most recent tasks; a task on every slot it holds)" : "(a task on every slot it holds)";
  const slots = {};
  for (const n of M.nodes) slots[n.name] = Math.max(slots[n.name] || 0, n.slots || 1);
  let now = M.now;
  for (const t of ran) now = Math.max(now, t.t_end || 0);
  if (M.run && M.run.state !== "running" && ran.length) now = Math.max(...ran.map((t) => t.t_end || t.t_start));
  const over = M.run && M.run.state !== "running" && M.run.t_end;
  const free = {}, bars = [];
  for (const t of ran) {
    const end = t.t_end || now;
    for (const [node, k] of (t.held || [[t.node || "?", 1]])) {
      const lanes = free[node] || (free[node] = new Array(slots[node] || 1).fill(0));
      for (let i = 0; i < k; i++) {
        let lane = lanes.findIndex((f) => f <= t.t_start + 1e-6);
        if (lane < 0) { lanes.push(0); lane = lanes.length - 1; }
        lanes[lane] = end;
        bars.push([t, node, lane, end]);
      }
      slots[node] = Math.max(slots[node] || 1, lanes.length);
    }
  }
  const rows = [];
  for (const n of Object.keys(slots).sort()) for (let s = 0; s < slots[n]; s++) rows.push(n + "/" + s);
  let t0 = ran.length ? ran[0].t_start : 0;
  if (M.run && M.run.t_start && !cut) t0 = Math.min(M.run.t_start, t0 || M.run.t_start);
  const span = over ? Math.max(now - t0, 0.05) : Math.max(now - t0, 1);   // a run over: its own span
  const left = 90, w = Math.max(500, document.getElementById("gantt-wrap").clientWidth - 20) - left - 10;
  const rowH = rows.length > 40 ? 10 : 22;
  svg.setAttribute("width", left + w + 10); svg.setAttribute("height", rows.length * rowH + 30);
  rows.forEach((r, i) => {
    if (rowH > 10 || i % 5 === 0) el("text", {x: 4, y: i * rowH + rowH - 7}, svg, r);
    el("line", {x1: left, x2: left + w, y1: i * rowH + rowH, y2: i * rowH + rowH, stroke: "#eee"}, svg);
  });
  const index = Object.fromEntries(rows.map((r, i) => [r, i]));
  for (const [t, node, lane, end] of bars) {
    const y = index[node + "/" + lane] * rowH + 3;
    const x = left + (t.t_start - t0) / span * w;
    const r = el("rect", {x: x.toFixed(1), y: y, width: Math.max(1, (end - t.t_start) / span * w).toFixed(1),
      height: rowH - 6, fill: M.colours[t.name] || "#ccc", class: "bar", "data-id": t.id,
      "data-state": t.state, stroke: t.state === "FAILED" ? "#b00000" : (t.t_end ? "#555" : "#000"),
      "stroke-width": t.t_end ? 0.5 : 1.5}, svg);
    el("title", {}, r, "#" + t.id + " " + t.name + " on " + node + "/" + lane + ": " + t.state +
       ", " + (end - t.t_start).toFixed(2) + " s");
    r.addEventListener("click", () => select(t.id));
  }
  const axisY = rows.length * rowH + 16, step = niceStep(span, 6);
  for (let k = 0; k <= span + 1e-9; k += step) {
    el("text", {x: left + k / span * w, y: axisY, "text-anchor": "middle"}, svg, secs(k));
  }
  el("text", {x: left + w, y: axisY + 12, "text-anchor": "end", fill: "#666"}, svg,
     cut ? "time since the first task drawn" : "time since the run started");
}
