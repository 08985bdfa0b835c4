// taskflow monitor: one event stream per run, the graph laid out by the server for its
// panel's shape, with fit, zoom, pan, follow and levels of detail (dagview.js), node charts
// and a live Gantt chart of the slots (charts.js), a paged task table, a task's logs
// followed beside it.
"use strict";
const RUN = document.body.dataset.run;
const API = "/api/runs/" + encodeURIComponent(RUN);
const STATES = ["SUBMITTED", "READY", "DISPATCHED", "RUNNING", "DONE", "FAILED", "CANCELLED",
  "INTERRUPTED"];
const COLORS = JSON.parse(document.body.dataset.colours);   // the report's and the terminal's
const PAGE_ROWS = 100;        // table rows per page
const KEEP_TASKS = 5000;      // a large run: the page keeps the most recent rows only

const M = {                     // what the page knows of the run
  run: null, counts: {}, byName: {}, colours: {}, detail: true,
  tasks: new Map(), edges: [], nodes: [], samples: new Map(), now: 0,
  dag: null, dagTasks: -1, dagNames: "", selected: null, logSource: null, page: 0,
};
const $ = (id) => document.getElementById(id);

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
  if (up.run) {
    M.run = up.run; setState(up.run.state); $("run").textContent = up.run.run_id;
    $("reason").textContent = up.run.reason || up.run.state_reason || "";   // the journal's words
  }
  if (up.counts) M.counts = up.counts;
  if (up.by_name) M.byName = up.by_name;
  if (up.colours) Object.assign(M.colours, up.colours);
  if (up.detail !== undefined) M.detail = up.detail;
  if (up.edges) M.edges = up.edges;
  for (const t of up.tasks || []) M.tasks.set(t.id, Object.assign(M.tasks.get(t.id) || {}, t));
  if (!M.detail && M.tasks.size > KEEP_TASKS) prune();
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

// a large run streams only what changed: keep the running tasks and the newest others
function prune() {
  const done = [...M.tasks.values()].filter((t) => t.state !== "RUNNING").sort((a, b) => a.id - b.id);
  for (const t of done.slice(0, M.tasks.size - KEEP_TASKS)) M.tasks.delete(t.id);
}

function setState(state) {
  const s = $("state"); s.textContent = state; s.className = "runstate " + state;
  document.body.dataset.state = state;
}

function drawAll() {
  drawCounts(); maybeLayout(); paintDag(); drawGantt(M, select); drawNodes(M); drawTable();
}

// ---- counts -------------------------------------------------------------------------
function drawCounts() {
  const box = $("counts"); box.textContent = "";
  const c = M.counts;
  const add = (id, label, colour) => {
    const sp = document.createElement("span"); sp.id = "count-" + id; sp.textContent = label;
    sp.style.background = colour || "#cde";
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

// ---- the graph: layout from the server, colours and counts here -----------------------
let layoutPending = false, layoutAgain = false;
function maybeLayout() {
  const total = M.counts.total || 0;
  const names = Object.keys(M.byName).sort().join("\n");
  if (total === M.dagTasks && (M.dag === null || M.dag.kind === "tasks" || names === M.dagNames)) return;
  if (layoutPending) { layoutAgain = true; return; }
  layoutPending = true;
  const started = Date.now();
  const w = $("dag-wrap"), aspect = w.clientWidth && w.clientHeight ? w.clientWidth / w.clientHeight : 1.6;
  fetch(API + "/dag?aspect=" + aspect.toFixed(2)).then((r) => r.json().then((j) => [r.ok, j])).then(([ok, j]) => {
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
      g.addEventListener("click", () => { $("search").value = name; M.page = 0; drawTable(true); });
    }
    DagView.attach(box.querySelector("svg"));
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
  DagView.follow();
}

function markSelected() {
  document.querySelectorAll("#dag g.sel").forEach((e) => e.classList.remove("sel"));
  if (M.selected !== null) { const g = $("task-" + M.selected); if (g) g.classList.add("sel"); }
}

// ---- the task table, a page at a time --------------------------------------------------
let searchTimer = null, serverRows = null;
function drawTable(fromServer) {
  const q = $("search").value.trim().toLowerCase(), st = $("filter").value;
  if (!M.detail) {               // a large run: the server searches and pages
    if (fromServer !== false) {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => {
        fetch(API + "/tasks?limit=" + (PAGE_ROWS + 1) + "&offset=" + M.page * PAGE_ROWS +
              "&q=" + encodeURIComponent(q) + "&state=" + st)
          .then((r) => r.json()).then((j) => { serverRows = j.tasks; drawTable(false); });
      }, 200);
    }
    if (serverRows === null) return;
    const known = !q ? (st ? M.counts[st] || 0 : M.counts.total || 0) : null;
    fillTable(serverRows.slice(0, PAGE_ROWS).map((t) => Object.assign(t, M.tasks.get(t.id) || {})),
              known, serverRows.length > PAGE_ROWS);
    return;
  }
  const all = [...M.tasks.values()].filter((t) => (!st || t.state === st) && (!q ||
    String(t.id) === q.replace("#", "") || (t.name || "").toLowerCase().includes(q) ||
    (t.node || "").toLowerCase().includes(q) || (t.params || "").toLowerCase().includes(q)));
  all.sort((a, b) => a.id - b.id);
  M.page = Math.min(M.page, Math.max(0, Math.ceil(all.length / PAGE_ROWS) - 1));
  fillTable(all.slice(M.page * PAGE_ROWS, (M.page + 1) * PAGE_ROWS), all.length,
            (M.page + 1) * PAGE_ROWS < all.length);
}

function fillTable(rows, total, more) {
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
  const first = M.page * PAGE_ROWS;
  $("table-note").textContent = !rows.length ? "no tasks" :
    (first + 1) + "–" + (first + rows.length) + (total != null ? " of " + total : more ? " (more)" : "");
  $("page-prev").disabled = M.page === 0;
  $("page-next").disabled = !more;
}

function turnPage(d) { M.page = Math.max(0, M.page + d); drawTable(true); }

// ---- a task's logs, followed, beside the table ---------------------------------------------
function select(id) {
  M.selected = id; markSelected(); drawTable(false);
  $("logs").textContent = ""; $("logs").classList.remove("empty"); $("logs-title").textContent = "Logs of task " + id;
  const panel = $("logs-panel"), r = panel.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) panel.scrollIntoView({block: "nearest"});
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
$("search").addEventListener("input", () => { M.page = 0; drawTable(true); });
$("filter").addEventListener("change", () => { M.page = 0; drawTable(true); });
$("page-prev").addEventListener("click", () => turnPage(-1));
$("page-next").addEventListener("click", () => turnPage(1));
DagView.init();
setInterval(() => { if (M.run && M.run.state === "running") { M.now = Math.max(M.now, Date.now() / 1000); drawGantt(M, select); drawCounts(); } }, 1000);
connect();
