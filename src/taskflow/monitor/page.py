"""The monitor's single page: an HTML shell, its script and its style sheet.

No build step and no outside assets (works offline, no CDN): the script
(``static/monitor.js``) and style sheet (``static/monitor.css``) are plain
files of the package. The page opens one event stream for the run
(:mod:`.stream`), asks the server for the DAG's layout only when tasks were
added, and follows a task's logs on a second stream. ``?select=<task id>``
opens a task's logs as a click on it would.
"""
from __future__ import annotations

import os

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def _read(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return fh.read()


STATIC: dict[str, tuple[str, str]] = {
    "monitor.js": (_read("monitor.js"), "text/javascript"),
    "monitor.css": (_read("monitor.css"), "text/css"),
}

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>taskflow monitor</title>
<link rel="stylesheet" href="/static/monitor.css">
</head>
<body data-run="__RUN__">
<header>
  <h1>taskflow run <span id="run"></span></h1><span id="state" class="runstate">connecting</span>
  <span id="elapsed"></span>
  <div id="counts"></div>
</header>
<div id="err"></div>
<main>
  <section class="panel" id="dag-panel">
    <h2>Task graph <small id="dag-kind"></small></h2>
    <div id="dag-wrap"><div id="dag"></div></div>
  </section>
  <section class="panel" id="side">
    <h2>Nodes <small>cpu <i class="k cpu"></i> memory <i class="k mem"></i> gpu <i class="k gpu"></i></small></h2>
    <div id="nodes"></div>
    <h2 id="logs-title">Logs: click a task</h2>
    <div id="taskinfo"></div>
    <div id="logs"></div>
  </section>
  <section class="panel wide" id="gantt-panel">
    <h2>Slots over time <small>(a task on every slot it holds)</small></h2>
    <div id="gantt-wrap"><svg id="gantt" xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg></div>
  </section>
  <section class="panel wide" id="table-panel">
    <h2>Tasks
      <input id="search" type="search" placeholder="search name, id, node, parameters">
      <select id="filter"><option value="">every state</option></select>
      <small id="table-note"></small>
    </h2>
    <table id="tasks"><thead><tr><th>id</th><th>name</th><th>state</th><th>node</th>
      <th>queued (s)</th><th>ran (s)</th><th>parameters</th></tr></thead><tbody></tbody></table>
  </section>
</main>
<script src="/static/monitor.js"></script>
</body></html>
"""
