// taskflow monitor: one event stream per run, the DAG laid out by the server (Graphviz),
// a live Gantt chart of the slots, node load charts, a task table, a task's logs followed.
"use strict";
const RUN = document.body.dataset.run;
const API = "/api/runs/" + encodeURIComponent(RUN);
const SVGNS = "http://www.w3.org/2000/svg";
const STATES = ["SUBMITTED", "READY", "DISPATCHED", "RUNNING", "DONE", "FAILED", "CANCELLED",
  "INTERRUPTED"];
const COLORS = {SUBMITTED: "#e0e0e0", READY: "#fff3b0", DISPATCHED: "#9ecae1",
  RUNNING: "#3182bd", DONE: "#74c476", FAILED: "#de2d26", CANCELLED: "#bdbdbd",
  INTERRUPTED: "#fd8d3c"};
const TABLE_ROWS = 500;

const M = {                     // what the page knows of the run
  run: null, counts: {}, byName: {}, colours: {}, detail: true,
  tasks: new Map(), edges: [], nodes: [], samples: new Map(), now: 0, t0: null,
  dag: null, dagTasks: -1, dagNames: "", selected: null, logSource: null,
};
const $ = (id) => document.getElementById(id);

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(s) { return s == null ? "" : s < 10 ? s.toFixed(2) : s.toFixed(1); }
function clock(t) { return new Date(t * 1000).toISOString().slice(11, 23); }

// ---- the stream ------------------------------------------------------------------
function connect() {
  const es = new EventSource(API + "/stream");
  es.addEventListener("snapshot", (e) => { apply(JSON.parse(e.data), true); });
  es.addEventListener("update", (e) => { apply(JSON.parse(e.data), false); });
  es.addEventListener("end", (e) => {
    es.close(); document.body.dataset.ended = "1";
    setState(JSON.parse(e.data).state); drawAll();
  });
  es.onerror = () => { if (!document.body.dataset.ended) $("err").textContent = "stream interrupted; reconnecting..."; };
  es.onopen = () => { $("err").textContent = ""; };
}

function apply(up, first) {
  if (first) { M.tasks.clear(); M.samples.clear(); }
  if (up.run) { M.run = up.run; setState(up.run.state); $("run").textContent = up.run.run_id; }
  if (up.counts) M.counts = up.counts;
  if (up.by_name) M.byName = up.by_name;
  if (up.colours) Object.assign(M.colours, up.colours);
  if (up.detail !== undefined) M.detail = up.detail;
  if (up.edges) M.edges = up.edges;
  for (const t of up.tasks || []) M.tasks.set(t.id, Object.assign(M.tasks.get(t.id) || {}, t));
  if (up.nodes) M.nodes = up.nodes;
  for (const s of up.samples || []) {
    if (!M.samples.has(s.node)) M.samples.set(s.node, []);
    const arr = M.samples.get(s.node); arr.push(s);
    if (arr.length > 2000) arr.splice(0, arr.length - 2000);
  }
  if (up.now) M.now = up.now;
  drawAll();
  if (first && !document.body.dataset.loaded) {
    document.body.dataset.loaded = "1";
    const sel = new URLSearchParams(location.search).get("select");
    if (sel) select(Number(sel));
  }
}

function setState(state) {
  const s = $("state"); s.textContent = state; s.className = "runstate " + state;
  document.body.dataset.state = state;
}

function drawAll() {
  drawCounts(); maybeLayout(); paintDag(); drawGantt(); drawNodes(); drawTable();
}

// ---- counts -------------------------------------------------------------------------
function drawCounts() {
  const box = $("counts"); box.textContent = "";
  const c = M.counts;
  const add = (id, label, colour) => {
    const sp = document.createElement("span"); sp.id = "count-" + id; sp.textContent = label;
    if (colour) sp.style.background = colour; else sp.style.background = "#cde";
    box.appendChild(sp);
  };
  add("total", "total: " + (c.total || 0));
  for (const st of STATES) add(st, st.toLowerCase() + ": " + (c[st] || 0), COLORS[st]);
  if (c.retries) add("retries", "retries: " + c.retries);
  if (M.run && M.run.t_start) {
    const end = M.run.t_end || (M.run.state === "running" ? Math.max(M.now, Date.now() / 1000) : M.now);
    $("elapsed").textContent = fmt(end - M.run.t_start) + " s";
  }
}

// ---- the DAG: layout from the server, colours here ---------------------------------------
let layoutPending = false, layoutAgain = false;
function maybeLayout() {
  const total = M.counts.total || 0;
  const names = Object.keys(M.byName).sort().join("\n");
  if (total === M.dagTasks && (M.dag === null || M.dag.kind === "tasks" || names === M.dagNames)) return;
  if (layoutPending) { layoutAgain = true; return; }
  layoutPending = true;
  const started = Date.now();
  fetch(API + "/dag").then((r) => r.json().then((j) => [r.ok, j])).then(([ok, j]) => {
    if (!ok) { $("dag").textContent = j.error || "no graph"; M.dagTasks = total; return; }
    M.dag = j; M.dagTasks = j.tasks; M.dagNames = j.names.slice().sort().join("\n");
    const box = $("dag");
    box.innerHTML = j.svg;
    $("dag-kind").textContent = j.kind === "tasks" ? "(one box per task" +
      (j.hidden_edges ? "; " + j.hidden_edges + " edge(s) implied by others not drawn)" : ")") :
      "(" + j.tasks + " tasks: one box per task name, with its counts)";
    for (const g of box.querySelectorAll("g.task")) {
      const id = Number(g.id.slice(5));
      g.dataset.id = id;
      g.addEventListener("click", () => select(id));
    }
    for (const g of box.querySelectorAll("g.name")) {
      const name = j.names[Number(g.id.slice(5))];
      g.dataset.name = name;
      g.addEventListener("click", () => { $("search").value = name; drawTable(true); });
    }
    paintDag();
  }).catch((e) => { $("err").textContent = "graph: " + e; }).finally(() => {
    // a growing graph is laid out again at most every 2 s
    setTimeout(() => { layoutPending = false; if (layoutAgain) { layoutAgain = false; maybeLayout(); } },
               Math.max(0, 2000 - (Date.now() - started)));
  });
}

function shape(g) { return g.querySelector("polygon, path"); }

function paintDag() {
  if (!M.dag) return;
  const box = $("dag");
  if (M.dag.kind === "tasks") {
    for (const g of box.querySelectorAll("g.task")) {
      const t = M.tasks.get(Number(g.dataset.id));
      const st = t ? t.state : "SUBMITTED";
      if (g.dataset.state === st) continue;
      g.dataset.state = st;
      const s = shape(g); if (s) s.setAttribute("fill", COLORS[st] || "#fff");
      const texts = g.querySelectorAll("text");
      if (texts.length > 1) texts[1].textContent = "#" + g.dataset.id + " " + st.toLowerCase();
    }
  } else {
    for (const g of box.querySelectorAll("g.name")) {
      const c = M.byName[g.dataset.name] || {};
      const st = c.FAILED ? "FAILED" : c.RUNNING ? "RUNNING" :
        (c.DISPATCHED || c.READY) ? "DISPATCHED" : (c.SUBMITTED ? "SUBMITTED" : "DONE");
      g.dataset.state = st;
      const s = shape(g); if (s) s.setAttribute("fill", COLORS[st]);
      const texts = g.querySelectorAll("text");
      const parts = [];
      for (const k of ["DONE", "RUNNING", "FAILED", "CANCELLED", "INTERRUPTED"]) if (c[k]) parts.push(c[k] + " " + k.toLowerCase());
      const waiting = (c.SUBMITTED || 0) + (c.READY || 0) + (c.DISPATCHED || 0);
      if (waiting) parts.push(waiting + " waiting");
      if (texts.length > 1) texts[1].textContent = parts.join(" · ");
    }
  }
  markSelected();
}

function markSelected() {
  document.querySelectorAll("#dag g.sel").forEach((e) => e.classList.remove("sel"));
  if (M.selected !== null) { const g = $("task-" + M.selected); if (g) g.classList.add("sel"); }
}

// ---- the Gantt chart of the slots ------------------------------------------------------
function drawGantt() {
  const svg = $("gantt");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const ran = [...M.tasks.values()].filter((t) => t.t_start).sort((a, b) => a.t_start - b.t_start || a.id - b.id);
  const slots = {};
  for (const n of M.nodes) slots[n.name] = Math.max(slots[n.name] || 0, n.slots || 1);
  const ended = ran.map((t) => t.t_end || 0);
  const now = M.run && M.run.state !== "running" && ran.length ? Math.max(...ended) : Math.max(M.now, ...ended);
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
  const t0 = M.run && M.run.t_start ? Math.min(M.run.t_start, ...ran.map((t) => t.t_start)) : (ran.length ? ran[0].t_start : 0);
  const span = Math.max(now - t0, 1);
  const left = 90, w = Math.max(600, $("gantt-wrap").clientWidth - 20) - left - 10, rowH = 22;
  svg.setAttribute("width", left + w + 10); svg.setAttribute("height", rows.length * rowH + 26);
  rows.forEach((r, i) => {
    el("text", {x: 4, y: i * rowH + 15}, svg, r);
    el("line", {x1: left, x2: left + w, y1: i * rowH + rowH, y2: i * rowH + rowH, stroke: "#eee"}, svg);
  });
  const index = Object.fromEntries(rows.map((r, i) => [r, i]));
  for (const [t, node, lane, end] of bars) {
    const y = index[node + "/" + lane] * rowH + 3;
    const x = left + (t.t_start - t0) / span * w;
    const r = el("rect", {x: x.toFixed(1), y: y, width: Math.max(1, (end - t.t_start) / span * w).toFixed(1),
      height: rowH - 6, fill: M.colours[t.name] || "#ccc", class: "bar", "data-id": t.id,
      "data-state": t.state, stroke: t.state === "FAILED" ? "#d00000" : (t.t_end ? "#555" : "#000"),
      "stroke-width": t.t_end ? 0.5 : 1.5}, svg);
    el("title", {}, r, "#" + t.id + " " + t.name + " on " + node + "/" + lane + ": " + t.state +
       ", " + fmt(end - t.t_start) + " s");
    r.addEventListener("click", () => select(t.id));
  }
  const axisY = rows.length * rowH + 16;
  for (let k = 0; k <= 5; k++) {
    el("text", {x: left + k * w / 5 - 8, y: axisY}, svg, fmt(k * span / 5) + " s");
  }
}

// ---- node load ---------------------------------------------------------------------------
function drawNodes() {
  const box = $("nodes"); box.textContent = "";
  for (const n of M.nodes) {
    const div = document.createElement("div"); div.className = "node"; div.dataset.node = n.name;
    const s = M.samples.get(n.name) || [];
    const last = s[s.length - 1];
    div.textContent = n.name + " — " + (n.slots || "?") + " slots" + (n.t_lost ? " (left: " + (n.reason || "") + ")" : "") +
      (last ? " — cpu " + Math.round(last.cpu || 0) + "%, mem " + Math.round(last.mem || 0) + "%" +
              (last.gpu != null ? ", gpu " + Math.round(last.gpu) + "%" : "") : "");
    const svg = el("svg", {width: 300, height: 60, class: "load"});
    if (!s.length) {
      el("text", {x: 8, y: 34, "font-size": 11, fill: "#888"}, svg, "no load samples yet (a node reports every 2 s)");
    } else {
      const a = s[0].t, b = Math.max(s[s.length - 1].t, a + 1);
      for (const [k, c] of [["cpu", "#3182bd"], ["mem", "#e6550d"], ["gpu", "#31a354"]]) {
        const pts = s.filter((x) => x[k] != null).map((x) => ((x.t - a) / (b - a) * 290 + 5).toFixed(1) + "," +
                                                       (57 - Math.min(100, x[k]) * 0.54).toFixed(1));
        if (!pts.length) continue;
        if (pts.length === 1) pts.push("295," + pts[0].split(",")[1]);
        el("polyline", {points: pts.join(" "), fill: "none", stroke: c, "stroke-width": 1.5, class: "series-" + k}, svg);
      }
    }
    div.appendChild(document.createElement("br")); div.appendChild(svg); box.appendChild(div);
  }
}

// ---- the task table ------------------------------------------------------------------------
let searchTimer = null, serverRows = null;
function drawTable(fromServer) {
  const q = $("search").value.trim().toLowerCase(), st = $("filter").value;
  if (!M.detail) {               // a big run: the server searches
    if (fromServer !== false) {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => {
        fetch(API + "/tasks?limit=" + TABLE_ROWS + "&q=" + encodeURIComponent(q) + "&state=" + st)
          .then((r) => r.json()).then((j) => { serverRows = j.tasks; drawTable(false); });
      }, 300);
    }
    if (serverRows === null) return;
    fillTable(serverRows.map((t) => Object.assign(t, M.tasks.get(t.id) || {})), serverRows.length);
    return;
  }
  const all = [...M.tasks.values()].filter((t) => (!st || t.state === st) && (!q ||
    String(t.id) === q.replace("#", "") || (t.name || "").toLowerCase().includes(q) ||
    (t.node || "").toLowerCase().includes(q) || (t.params || "").toLowerCase().includes(q)));
  all.sort((a, b) => a.id - b.id);
  fillTable(all.slice(0, TABLE_ROWS), all.length);
}

function fillTable(rows, total) {
  const body = $("tasks").querySelector("tbody");
  body.textContent = "";
  for (const t of rows) {
    const tr = document.createElement("tr"); tr.dataset.id = t.id; tr.dataset.state = t.state;
    if (t.id === M.selected) tr.className = "sel";
    const queued = t.t_start && t.t_submit ? t.t_start - t.t_submit : null;
    const ran = t.t_start ? (t.t_end || M.now) - t.t_start : null;
    for (const [v, cls] of [[t.id], [t.name], [t.state.toLowerCase(), "st"], [t.node || ""],
                            [fmt(queued)], [fmt(ran)], [t.params || "", "params"]]) {
      const td = document.createElement("td"); td.textContent = v;
      if (cls) td.className = cls;
      if (cls === "st") td.style.background = COLORS[t.state];
      tr.appendChild(td);
    }
    tr.addEventListener("click", () => select(t.id));
    body.appendChild(tr);
  }
  $("table-note").textContent = total > rows.length ? "first " + rows.length + " of " + total : total + " tasks";
}

// ---- a task's logs, followed ------------------------------------------------------------------
function select(id) {
  M.selected = id; markSelected(); drawTable(false);
  $("logs").textContent = ""; $("logs-title").textContent = "Logs of task " + id;
  if (M.logSource) M.logSource.close();
  fetch(API + "/tasks/" + id).then((r) => r.json()).then((j) => {
    const t = j.task; if (!t) return;
    $("taskinfo").textContent = "#" + t.id + " " + t.name + "(" + (t.params || "") + ") on " + (t.node || "-") +
      ": " + t.state + (t.error ? " — " + t.error : "");
  });
  const es = new EventSource(API + "/logs/stream?task=" + id);
  M.logSource = es;
  es.addEventListener("lines", (e) => {
    const box = $("logs");
    const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    for (const l of JSON.parse(e.data)) {
      const d = document.createElement("div");
      d.className = "logline lvl-" + l.level; d.dataset.level = l.level;
      const ts = document.createElement("span"); ts.className = "t";
      ts.textContent = clock(l.t) + " " + l.level + " ";
      d.appendChild(ts); d.appendChild(document.createTextNode(l.line));
      box.appendChild(d);
    }
    if (stick) box.scrollTop = box.scrollHeight;
  });
  es.addEventListener("end", (e) => {
    es.close();
    const info = JSON.parse(e.data), box = $("logs");
    const note = (text) => { const d = document.createElement("div"); d.className = "lognote"; d.textContent = text; box.appendChild(d); };
    if (!info.lines) note("(no output in the journal)");
    for (const s of ["stdout", "stderr", "stdin"]) if (info.streams[s])
      note("its " + s + (s === "stdin" ? " was read from " : " went to ") + info.streams[s][1] + " (parameter " + info.streams[s][0] + ")");
    if (info.log_files.length) note("program output files: " + info.log_files.join(", "));
    if (info.state === "FAILED" && info.error) note(info.error);
  });
}

// ---- start -------------------------------------------------------------------------------------
for (const st of STATES) {
  const o = document.createElement("option"); o.value = st; o.textContent = st.toLowerCase(); $("filter").appendChild(o);
}
$("search").addEventListener("input", () => drawTable(true));
$("filter").addEventListener("change", () => drawTable(true));
setInterval(() => { if (M.run && M.run.state === "running") { M.now = Math.max(M.now, Date.now() / 1000); drawGantt(); drawCounts(); } }, 1000);
connect();
