"""The monitor's single page: an HTML shell, its script and its style sheet.

No build step and no outside assets (works offline, no CDN): the scripts
(``static/monitor.js``: the stream, the table, the logs; ``dagview.js``: the
graph panel's fit, zoom, pan and follow; ``charts.js``: the node charts and
the Gantt chart) and the style sheet (``static/monitor.css``) are plain files
of the package. The page opens one event stream for the run
(:mod:`.stream`), asks the server for the DAG's layout only when tasks were
added, and follows a task's logs on a second stream. ``?select=<task id>``
opens a task's logs as a click on it would. The state colours are
:data:`..observe.palette.STATE_COLOURS` (the report's and the terminal's),
written into the page.
"""
from __future__ import annotations

import html
import json
import os

from ..observe.palette import STATE_COLOURS

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def _read(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return fh.read()


STATIC: dict[str, tuple[str, str]] = {
    "monitor.js": (_read("monitor.js"), "text/javascript"),
    "dagview.js": (_read("dagview.js"), "text/javascript"),
    "charts.js": (_read("charts.js"), "text/javascript"),
    "monitor.css": (_read("monitor.css"), "text/css"),
}

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>taskflow monitor</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/monitor.css">
</head>
<body data-run="__RUN__" data-colours="__COLOURS__">
<header>
  <h1>taskflow run <span id="run"></span></h1><span id="state" class="runstate">connecting</span>
  <span id="elapsed"></span> <span id="reason"></span>
  <div id="counts"></div>
</header>
<div id="err"></div>
<main>
  <div id="left">
    <section class="panel" id="dag-panel">
      <h2>Task graph <small id="dag-kind"></small>
        <span class="tools"><button id="dag-fit" type="button" title="the whole graph in the panel">fit</button><button id="dag-in" type="button" title="zoom in">+</button><button id="dag-out" type="button" title="zoom out">&minus;</button><label title="keep the running tasks in view"><input id="dag-follow" type="checkbox" checked> follow running</label></span>
      </h2>
      <div id="dag-wrap"><div id="dag"></div><div id="dag-tip" hidden></div></div>
      <p class="hint">wheel: zoom, drag: pan, double-click: fit; click a box for its logs; boxes too small to label are coloured cells (hover for the task, zoom in for labels)</p>
    </section>
    <section class="panel" id="gantt-panel">
      <h2>Slots over time <small id="gantt-note">(a task on every slot it holds)</small></h2>
      <div id="gantt-wrap"><svg id="gantt" xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg></div>
    </section>
    <section class="panel" id="table-panel">
      <h2>Tasks
        <input id="search" type="search" placeholder="search name, id, node, parameters">
        <select id="filter"><option value="">every state</option></select>
        <span class="pager"><button id="page-prev" type="button">&lsaquo; previous</button><small id="table-note"></small><button id="page-next" type="button">next &rsaquo;</button></span>
      </h2>
      <table id="tasks"><thead><tr><th>id</th><th>name</th><th>state</th><th>node</th>
        <th>queued (s)</th><th>ran (s)</th><th>parameters</th></tr></thead><tbody></tbody></table>
    </section>
  </div>
  <aside id="side">
    <section class="panel" id="nodes-panel">
      <h2>Nodes <small>over the run's time</small></h2>
      <div id="nodes"></div>
    </section>
    <section class="panel" id="logs-panel">
      <h2 id="logs-title">Logs: click a task</h2>
      <div id="taskinfo"></div>
      <div id="logs" class="empty"><p id="logs-hint">Click a task (a box in the graph, a bar in the slots chart or a row of the table) to see here what it printed: its stdout and stderr lines, each with its time, followed live while it runs, then where its program's output files went and, for a failed task, its error.</p></div>
    </section>
  </aside>
</main>
<script src="/static/charts.js"></script>
<script src="/static/dagview.js"></script>
<script src="/static/monitor.js"></script>
</body></html>
""".replace("__COLOURS__", html.escape(json.dumps(STATE_COLOURS), quote=True))
