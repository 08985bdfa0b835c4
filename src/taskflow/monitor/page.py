"""The monitor's single page: DAG with live states, counts, node load, logs on click.

Plain HTML + JavaScript, no build step, no outside assets (works offline).
``?select=<task id>`` opens a task's logs as a click on it would.
"""
from __future__ import annotations

PAGE = r"""<!doctype html>
<html><head><meta charset="utf-8"><title>taskflow monitor</title>
<style>
body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#222}
header{background:#234;color:#fff;padding:8px 16px}
header h1{font-size:18px;margin:0;display:inline-block}
#state{display:inline-block;margin-left:12px;padding:1px 8px;border-radius:8px;background:#567}
#counts span{margin-right:12px}
main{display:flex;gap:12px;padding:8px}
#dag-wrap{flex:3;overflow:auto;border:1px solid #ccc;max-height:82vh}
aside{flex:2;min-width:300px}
h2{font-size:14px;margin:6px 0}
.task rect{stroke:#333;stroke-width:1;cursor:pointer}
.task.sel rect{stroke:#000;stroke-width:3}
.task text{font-size:10px;pointer-events:none}
#logs{font-family:monospace;font-size:12px;background:#111;color:#ddd;padding:6px;
      max-height:45vh;overflow:auto;white-space:pre-wrap}
.lvl-STDERR{color:#ff8a80}.lvl-RAW{color:#ffd180}.logline .t{color:#888}
.node{margin-bottom:6px}.node svg{background:#f6f6f6;border:1px solid #ddd}
#taskinfo{font-size:12px;margin:4px 0}
#err{color:#b00}
</style></head>
<body>
<header><h1>taskflow run <span id="run"></span></h1><span id="state">…</span>
<div id="counts"></div></header>
<div id="err"></div>
<main>
<section id="dag-wrap"><svg id="dag" xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg></section>
<aside>
<h2>Nodes (cpu % blue, memory % orange)</h2><div id="nodes"></div>
<h2 id="logs-title">Logs: click a task</h2><div id="taskinfo"></div><div id="logs"></div>
</aside></main>
<script>
const RUN = __RUN__, TOKEN = __TOKEN__;
const HDR = {headers: {"Authorization": "Bearer " + TOKEN}};
const COLORS = {SUBMITTED: "#eeeeee", READY: "#dddddd", DISPATCHED: "#6baed6",
  RUNNING: "#3182bd", DONE: "#74c476", FAILED: "#de2d26", CANCELLED: "#bdbdbd"};
const SVGNS = "http://www.w3.org/2000/svg";
let selected = null, lastLog = 0, drawnKey = "", runState = "running";
const $ = (id) => document.getElementById(id);

async function api(path) {
  const r = await fetch("/api/runs/" + encodeURIComponent(RUN) + path, HDR);
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function layout(tasks, edges) {
  const level = {}, preds = {};
  for (const [a, b] of edges) (preds[b] = preds[b] || []).push(a);
  for (const t of tasks) {            // ids grow in submission order: producers come first
    let l = 0;
    for (const p of (preds[t.id] || [])) if (level[p] !== undefined) l = Math.max(l, level[p] + 1);
    level[t.id] = l;
  }
  const rows = {}, pos = {};
  for (const t of tasks) { const l = level[t.id]; (rows[l] = rows[l] || []).push(t.id); }
  let width = 0, height = 0;
  for (const l in rows) rows[l].forEach((id, i) => {
    pos[id] = [10 + i * 100, 10 + l * 56];
    width = Math.max(width, 110 + i * 100); height = Math.max(height, 50 + l * 56);
  });
  return {pos, width, height};
}
function drawDag(data) {
  const svg = $("dag");
  const key = data.tasks.length + ":" + data.edges.length;
  if (key !== drawnKey) {
    drawnKey = key;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const {pos, width, height} = layout(data.tasks, data.edges);
    svg.setAttribute("width", width); svg.setAttribute("height", height);
    for (const [a, b] of data.edges) {
      if (!pos[a] || !pos[b]) continue;
      const [x1, y1, x2, y2] = [pos[a][0] + 45, pos[a][1] + 28, pos[b][0] + 45, pos[b][1]];
      const bend = (y2 - y1 > 40 && Math.abs(x2 - x1) < 60) ? 60 : 0;   // skip over levels
      el("path", {d: "M" + x1 + " " + y1 + " C" + (x1 + bend) + " " + (y1 + 20) + " " +
                  (x2 + bend) + " " + (y2 - 20) + " " + x2 + " " + y2, stroke: "#999",
                  fill: "none"}, svg);
    }
    for (const t of data.tasks) {
      const g = el("g", {id: "task-" + t.id, class: "task", "data-id": t.id,
                         transform: "translate(" + pos[t.id][0] + "," + pos[t.id][1] + ")"}, svg);
      el("rect", {width: 90, height: 28, rx: 4}, g);
      const tx = el("text", {x: 4, y: 12}, g); tx.textContent = t.name.slice(0, 16);
      const ts = el("text", {x: 4, y: 24, class: "st"}, g);
      const ti = el("title", {}, g); ti.textContent = "#" + t.id + " " + t.name + "(" + (t.params || "") + ")";
      g.addEventListener("click", () => select(t.id));
    }
    if (selected !== null) mark(selected);
  }
  for (const t of data.tasks) {
    const g = $("task-" + t.id);
    if (!g) continue;
    g.setAttribute("data-state", t.state);
    g.querySelector("rect").setAttribute("fill", COLORS[t.state] || "#fff");
    g.querySelector(".st").textContent = "#" + t.id + " " + t.state.toLowerCase();
  }
}
function mark(id) {
  document.querySelectorAll(".task.sel").forEach(e => e.classList.remove("sel"));
  const g = $("task-" + id); if (g) g.classList.add("sel");
}
async function select(id) {
  selected = Number(id); lastLog = 0; mark(selected);
  $("logs").textContent = ""; $("logs-title").textContent = "Logs of task " + id;
  const info = await api("/tasks/" + id);
  const t = info.task;
  $("taskinfo").textContent = t.name + "(" + (t.params || "") + ") on " + (t.node || "-") + ": " +
    t.state + (t.error ? " — " + t.error : "");
  await pollLogs();
}
async function pollLogs() {
  if (selected === null) return;
  const data = await api("/logs?task=" + selected + "&after=" + lastLog);
  const box = $("logs");
  for (const l of data.logs) {
    const d = document.createElement("div");
    d.className = "logline lvl-" + l.level; d.setAttribute("data-level", l.level);
    const ts = document.createElement("span"); ts.className = "t";
    ts.textContent = new Date(l.t * 1000).toISOString().slice(11, 23) + " " + l.level + " ";
    d.appendChild(ts); d.appendChild(document.createTextNode(l.line));
    box.appendChild(d); lastLog = l.id;
  }
  if (data.logs.length === 0 && box.childElementCount === 0)
    box.innerHTML = '<div class="nolog">(no output)</div>';
  else { const n = box.querySelector(".nolog"); if (n && data.logs.length) n.remove(); }
}
function drawNodes(data) {
  const box = $("nodes"); box.textContent = "";
  for (const n of data.nodes) {
    const div = document.createElement("div"); div.className = "node";
    div.textContent = n.name + " — " + (n.slots || "?") + " slots" + (n.t_lost ? " (lost: " + n.reason + ")" : "");
    const s = data.samples.filter(x => x.node === n.name);
    const svg = el("svg", {width: 260, height: 50, class: "load"});
    if (!s.length) {
      const tx = el("text", {x: 8, y: 30, "font-size": 11, fill: "#888"}, svg);
      tx.textContent = "no load samples yet (a node reports every few seconds)";
    } else {
      const t0 = s[0].t, t1 = Math.max(s[s.length - 1].t, t0 + 1);
      for (const [k, c] of [["cpu", "#3182bd"], ["mem", "#e6550d"]]) {
        const pts = s.map(x => ((x.t - t0) / (t1 - t0) * 250 + 5).toFixed(1) + "," +
                              (48 - (x[k] || 0) * 0.46).toFixed(1)).join(" ");
        el("polyline", {points: s.length === 1 ? pts + " 255," + pts.split(",")[1] : pts,
                        fill: "none", stroke: c, "stroke-width": 1.5}, svg);
      }
    }
    div.appendChild(document.createElement("br")); div.appendChild(svg); box.appendChild(div);
  }
}
async function tick() {
  try {
    const info = await api("");
    runState = info.run.state;
    $("run").textContent = info.run.run_id; $("state").textContent = runState;
    const c = info.counts;
    $("counts").innerHTML = "";
    for (const k of ["total", "SUBMITTED", "DISPATCHED", "DONE", "FAILED", "CANCELLED", "retries"]) {
      const sp = document.createElement("span"); sp.id = "count-" + k;
      sp.textContent = k.toLowerCase() + ": " + (c[k] || 0); $("counts").appendChild(sp);
    }
    drawDag(await api("/tasks"));
    drawNodes(await api("/nodes"));
    await pollLogs();
    $("err").textContent = "";
    if (!document.body.dataset.loaded) {
      document.body.dataset.loaded = "1";
      const sel = new URLSearchParams(location.search).get("select");
      if (sel) await select(sel);
    }
  } catch (e) { $("err").textContent = String(e); }
  setTimeout(tick, runState === "running" ? 1000 : 5000);
}
tick();
</script></body></html>
"""
