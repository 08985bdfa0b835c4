"""taskflow in a real Jupyter kernel, driven headless through nbclient.

The documentation's notebook (examples/notebook/taskflow_in_jupyter.ipynb: start, a
200-task fan-out with its reduction, a failing task caught by its own exception type,
the futures shown, stop) runs cell by cell in one kernel; each cell's outputs are checked
for what the page says they show, the journal for the run's end (finished: the failure was
handled by the script), and the kernel's process tree for what is left after ``stop()``
(nothing). The same kernel then has a cell interrupted while a task runs (the task is
cancelled, the run goes on), is restarted while a task runs (the run ends, journaled as
interrupted, and its processes with it) and finally is killed with SIGKILL while a task
runs (its agents and executors end: a kernel's run keeps no agent for adoption).

The rendered notebook (nbconvert's HTML) is photographed by headless Chromium; with
``TASKFLOW_UPDATE_PICTURES=1`` (``make pictures``) the picture goes to docs/images/.
"""
from __future__ import annotations

import io
import os
import signal
import sqlite3
import threading

import pytest

from support import browser
from support.paths import ROOT
from support.waiting import until

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
psutil = pytest.importorskip("psutil")

NOTEBOOK = os.path.join(ROOT, "examples", "notebook", "taskflow_in_jupyter.ipynb")
UPDATE = os.environ.get("TASKFLOW_UPDATE_PICTURES") == "1"


class Kernel:
    """One kernel (nbclient's), the notebook it runs, and cells added to it."""

    def __init__(self, client, nb, work: str) -> None:
        self.client = client
        self.nb = nb
        self.work = work
        self.runs = os.path.join(work, "runs")

    def execute(self, index: int):
        cell = self.nb.cells[index]
        self.client.execute_cell(cell, index)
        return cell.outputs

    def run(self, source: str, errors: bool = False):
        """Add a cell, execute it; its outputs (an error in it fails the test unless
        ``errors``)."""
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        try:
            self.client.execute_cell(cell, len(self.nb.cells) - 1)
        except nbclient.exceptions.CellExecutionError:
            if not errors:
                raise
        return cell.outputs

    def value(self, source: str) -> str:
        """What a cell printing one expression printed."""
        return text(self.run(f"print({source})")).strip()

    def pid(self) -> int:
        return self.client.km.provisioner.process.pid


def text(outputs) -> str:
    """Every output's text: streams, and the text/plain of the others."""
    out = []
    for o in outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type == "error":
            out.append(f"{o.ename}: {o.evalue}")
        else:
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def htmls(outputs) -> list[str]:
    return [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]


def descendants(pid: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def alive(pids: set[int]) -> set[int]:
    left = set()
    for p in pids:
        try:
            if psutil.Process(p).status() != psutil.STATUS_ZOMBIE:
                left.add(p)
        except psutil.NoSuchProcess:
            pass
    return left


def current_run_id(kernel: "Kernel") -> str:
    """The id of the kernel's current run: the journal to read (the latest by name may be
    another run of the same second: ids are named to the second)."""
    return text(kernel.run("print('run:', taskflow.current_runtime().run_id)")).split(
        "run: ")[1].split()[0]


def journal_run(runs: str, rid: str | None = None) -> dict:
    """The run row of run ``rid`` under ``runs`` (None: the one journal there started last;
    give the id when a run may have started in the second another one ended)."""
    if rid is None:
        rid = sorted(d for d in os.listdir(runs) if os.path.exists(os.path.join(runs, d, "journal.db")))[-1]
    with sqlite3.connect(os.path.join(runs, rid, "journal.db")) as db:
        db.row_factory = sqlite3.Row
        return dict(db.execute("SELECT * FROM run").fetchone())


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("notebook"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    saved = {k: os.environ.get(k) for k in ("TASKFLOW_RUN_DIR", "TASKFLOW_NOTEBOOK_PROGRESS")}
    os.environ["TASKFLOW_RUN_DIR"] = os.path.join(work, "runs")       # the kernel's runs
    # the notebook's progress as HTML, which the page nbconvert renders shows (widgets are
    # the default with ipywidgets: test_widgets_progress)
    os.environ["TASKFLOW_NOTEBOOK_PROGRESS"] = "html"
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": work}})
    try:
        with client.setup_kernel():
            yield Kernel(client, nb, work)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def executed(kernel):
    """The notebook's cells run in order; (outputs per cell index, the kernel's pid, the
    processes the kernel had before the first cell)."""
    cells = list(kernel.nb.cells)
    pid = kernel.pid()
    before = descendants(pid)
    outputs = {}
    for i, cell in enumerate(cells):
        if cell.cell_type == "code":
            outputs[i] = kernel.execute(i)
    return outputs, pid, before


def test_notebook_cells_show_the_run(executed, kernel):
    outputs, pid, before = executed
    start, fanout, failing, futures, stop = sorted(outputs)
    # start: one line, the run and its slots
    assert "taskflow run " in text(outputs[start]) and "2 slot(s)" in text(outputs[start])
    # the fan-out: its result, and the progress display in its final state
    assert "sum of squares: 2646700" in text(outputs[fanout])
    progress = [h for h in htmls(outputs[fanout]) if "tf-progress" in h]
    assert len(progress) == 1, outputs[fanout]
    assert "data-live='0'" in progress[0] and "all 201 tasks ended" in progress[0]
    assert "200/200 done" in progress[0] and "1/1 done" in progress[0]
    # the failing task: caught by its own type; the future's HTML names the task, its
    # state and node, the error and the user's frame with its source line
    shown = text(outputs[failing])
    assert "caught: TaskError(ZeroDivisionError) - a ZeroDivisionError: True" in shown
    fut = next(h for h in htmls(outputs[failing]) if "tf-progress" not in h)
    for part in ("ratio (id 202)", ">failed<", ">local<", "ZeroDivisionError: division by zero",
                 "Cell In[3], line 3, in ratio", "return a / b"):
        assert part in fut, (part, fut)
    assert " s</td>" in fut          # its duration
    bar = next(h for h in htmls(outputs[failing]) if "tf-progress" in h)
    assert "1 failed" in bar and "data-live='0'" in bar
    # the futures: counts by state, and the failure with its frames
    (listing,) = htmls(outputs[futures])
    assert "201 futures</b>: 200 done, 1 failed" in listing and "return a / b" in listing
    # stop: the run's card; the journal says finished, the failure handled
    (card,) = htmls(outputs[stop])
    assert "finished" in card and "(handled by the script)" in card
    assert "taskflow report " in card
    row = journal_run(kernel.runs)
    assert row["state"] == "finished" and row["n_failed"] == 1 and row["n_done"] == 201, row
    # no process of the run is left in the kernel's tree
    assert descendants(pid) <= before, [psutil.Process(p).cmdline() for p in descendants(pid) - before]


def test_rendered_notebook_picture(executed, kernel, tmp_path):
    """nbconvert's HTML of the executed notebook, photographed: the progress and the failure
    are on it."""
    nbconvert = pytest.importorskip("nbconvert")
    nb = nbformat.from_dict(kernel.nb)
    nb.cells = nb.cells[:len(executed[0]) + 1]          # the notebook's own cells
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    page = tmp_path / "notebook.html"
    page.write_text(body, encoding="utf-8")
    target = os.path.join(ROOT, "docs", "images") if UPDATE else str(tmp_path)
    with browser.page(1000, 900) as pg:
        pg.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                 else r.abort())                        # (no network: CDN scripts skipped)
        pg.goto(page.as_uri(), wait_until="domcontentloaded")
        txt = pg.inner_text("body")
        for part in ("all 201 tasks ended", "200/200 done", "ZeroDivisionError: division by zero",
                     "return a / b", "201 futures"):
            assert part in txt, part
        png = pg.screenshot(full_page=True)
    keep(png, os.path.join(target, "notebook.png"))


def keep(png: bytes, path: str) -> None:
    """A picture worth showing (not blank, big enough), written as a palette PNG."""
    from PIL import Image
    img = Image.open(io.BytesIO(png)).convert("RGB")
    assert img.width >= 1000 and img.height >= 900, img.size
    colours = img.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) >= 16, "nearly blank"
    img.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE) \
        .save(path, format="PNG", optimize=True)


def test_progress_updates_after_its_cell(executed, kernel):
    """A cell that ends before its tasks shows them running; its display is brought to the
    final counts while a later cell runs, and stops there."""
    release = os.path.join(kernel.work, "release")
    kernel.run("import os, time, taskflow\nfrom taskflow import task, wait_on\n"
               "taskflow.start(workers=2)\n\n"
               "@task(returns=1)\ndef held(i):\n"
               f"    while not os.path.exists({release!r}):\n        time.sleep(0.02)\n"
               "    return i")
    first = kernel.run("futs = [held(i) for i in range(4)]")
    (live,) = htmls(first)
    assert "data-live='1'" in live and "0/4 tasks ended, running" in live, live
    open(release, "w").close()
    kernel.run("print(sum(wait_on(futs)))")
    (final,) = htmls(first)             # the same output, updated in place
    assert "data-live='0'" in final and "all 4 tasks ended" in final and "4/4 done" in final
    kernel.run("taskflow.stop()")


def test_widgets_progress(executed, kernel):
    """With ipywidgets, the progress is a widget whose last value is the final counts; the
    run's line links to its monitor when asked; start() again returns the running run."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("flask", reason="the monitor extra is not installed")
    line = htmls(kernel.run("import taskflow\nfrom taskflow import task, wait_on\n"
                            "taskflow.start(workers=2, progress='widgets', monitor=True)"))
    assert len(line) == 1 and "<a href='http://127.0.0.1:" in line[0] and "token=" in line[0]
    again = text(kernel.run("print(taskflow.start(workers=5) is taskflow.current_runtime())"))
    assert "already running (the arguments given now are not applied" in again and "True" in again
    out = kernel.run("@task(returns=1)\ndef cube(x):\n    return x ** 3\n\n"
                     "print(sum(wait_on([cube(i) for i in range(20)])))")
    assert "36100" in text(out)
    (view,) = [o["data"]["application/vnd.jupyter.widget-view+json"] for o in out
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    final = kernel.client.widget_state[view["model_id"]]["value"]
    assert "all 20 tasks ended" in final and "20/20 done" in final, final
    kernel.run("taskflow.stop()")


def test_pycompss_interactive(executed, kernel):
    """PyCOMPSs's pycompss.interactive.start/stop in a kernel are taskflow.start/stop there:
    the run's line, a cell's progress, the run's card at stop."""
    kernel.run("from taskflow.compat.importhook import install\ninstall()")
    started = kernel.run("import pycompss.interactive as ipycompss\nipycompss.start()")
    assert "taskflow run " in text(started) and "slot(s)" in text(started)
    out = kernel.run("from pycompss.api.task import task\n"
                     "from pycompss.api.api import compss_wait_on\n\n"
                     "@task(returns=1)\ndef inc(x):\n    return x + 1\n\n"
                     "print(compss_wait_on(inc(41)))")
    assert "42" in text(out) and "all 1 tasks ended" in text(out)
    stopped = text(kernel.run("ipycompss.stop()"))
    assert "finished" in stopped and "1 tasks, 1 done" in stopped, stopped
    # a task called with no run started starts the run taskflow.start() starts in a kernel
    out = text(kernel.run("print(compss_wait_on(inc(1)))"))
    assert "taskflow run " in out and "slot(s)" in out and "all 1 tasks ended" in out, out
    assert "finished" in text(kernel.run("taskflow.stop()"))


def test_cell_tasks_on_ssh_nodes(executed, kernel, ssh_hosts, tmp_path):
    """A function and a class defined in cells (``__main__``) run on SSH nodes."""
    nodes = ", ".join(
        f"NodeConfig(name={n.name!r}, host={n.host!r}, user='root', identity_file={n.identity_file!r}, "
        f"computing_units=2, python=sys.executable, working_dir={n.working_dir!r})"
        for n in ssh_hosts.nodes(tmp_path))
    kernel.run("import sys, taskflow\nfrom taskflow import task, wait_on\n"
               "from taskflow.providers.cluster import NodeConfig\n"
               "from taskflow.providers.ssh import SSHProvider\n"
               f"taskflow.start(providers=[SSHProvider([{nodes}], "
               f"known_hosts={ssh_hosts.known_hosts!r}, heartbeat_timeout=3.0, connect_timeout=5.0)])")
    out = kernel.run("class Point:\n    def __init__(self, x):\n        self.x = x\n\n"
                     "@task(returns=1)\ndef double(p):\n    return Point(p.x * 2)\n\n"
                     "print('doubled:', [p.x for p in wait_on([double(Point(i)) for i in range(8)])])")
    assert "doubled: [0, 2, 4, 6, 8, 10, 12, 14]" in text(out), text(out)
    rid = current_run_id(kernel)
    kernel.run("taskflow.stop()")
    with sqlite3.connect(os.path.join(kernel.runs, rid,
                                      "journal.db")) as db:
        where = {n for (n,) in db.execute("SELECT node FROM task_rows")}
    assert where <= {"h1", "h2"} and where, where


SLOW = """
import os, time
from taskflow import task, wait_on

@task(returns=1)
def slow(marker):
    open(marker, "w").close()
    time.sleep(120)
    return 1

@task(returns=1)
def square(x):
    return x * x
"""


def test_interrupt_restart_and_kill(executed, kernel):
    """The stop button cancels the running task (the run goes on); a restart ends the run
    and its processes; a SIGKILLed kernel leaves no process of its run either."""
    marker = os.path.join(kernel.work, "started")
    kernel.run(SLOW + "import taskflow\ntaskflow.start(workers=1)")
    pid = kernel.pid()
    rid = current_run_id(kernel)     # the SSH test's run may have ended in this second

    def interrupt() -> None:
        until(lambda: os.path.exists(marker), 60, "the slow task to start")
        os.kill(pid, signal.SIGINT)             # what the kernel's stop button sends
    t = threading.Thread(target=interrupt)
    t.start()
    out = kernel.run(f"fut = slow({marker!r})\nwait_on(fut)", errors=True)
    t.join()
    said = text(out)
    assert "KeyboardInterrupt" in said and "1 task(s) that had not ended were cancelled" in said
    assert "cancelled" in kernel.value("taskflow.show(fut)")
    assert "49" in kernel.value("square(7).result(timeout=60)").splitlines()  # the slot is free

    # a restart while a task runs: the run ends, interrupted, and takes its processes along
    os.unlink(marker)
    kernel.run(f"fut = slow({marker!r})")
    until(lambda: os.path.exists(marker), 60, "the slow task to start")
    tree = descendants(pid)
    assert tree
    from jupyter_core.utils import run_sync
    # (the kernel gets its shutdown's time: on a loaded machine the 5 s Jupyter gives it
    # before a SIGKILL could cut the run's end short, which the kill below covers)
    kernel.client.km.shutdown_wait_time = 60
    run_sync(kernel.client.km.restart_kernel)(now=False)
    until(lambda: not alive(tree), 30, "the restarted kernel's run to leave no process")
    row = journal_run(kernel.runs, rid)
    assert row["state"] == "interrupted" and "kernel shut down" in row["reason"], row

    # SIGKILL while a task runs: the agents see their master gone and end
    os.unlink(marker)
    kernel.run(SLOW + f"import taskflow\ntaskflow.start(workers=1)\nfut = slow({marker!r})")
    pid = kernel.pid()
    until(lambda: os.path.exists(marker), 60, "the slow task to start")
    tree = descendants(pid)
    assert tree
    os.kill(pid, signal.SIGKILL)
    until(lambda: not alive(tree), 30, "the killed kernel's run to leave no process")
