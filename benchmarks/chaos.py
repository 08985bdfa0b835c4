"""Chaos driver (issue 14): a 10,000-task workflow whose every value and file is checked,
run while things die.

    python benchmarks/chaos.py [--tasks 10000] [--kills 15] [--seed S] [--only a,b,c]

(a) executors and node agents SIGKILLed at random moments (``--kills`` executor
    kills at least, ``--agent-kills`` whole agents, ``--nodes`` local agents);
(b) the master (``taskflow run``) SIGKILLed at a random moment, then
    ``taskflow run --resume``;
(c) on the SSH testbed (testbed/ssh_hosts.sh: sshd hosts in network
    namespaces), one host's link cut (veth down) mid-run and restored later;
(d) the only node agent (``--nodes 1``) SIGKILLed: the run must fail at once
    with "no nodes left", never hang, and leave no process;
(e) on the SSH testbed, the master SIGKILLed while 100+ tasks of seconds run, then
    ``taskflow run --resume`` at once: the agents keep their running tasks and the
    resumed master adopts them: none of them runs again (benchmarks/chaos_adopt.py).
(f) (e) on the Slurm testbed (testbed/slurm.sh), with the dial-back agents of
    ``--slurm batch`` and ``--slurm pilot`` jobs (one row each): they dial the resumed
    master back and their running tasks are adopted (benchmarks/chaos_slurm.py).
(g) on the SSH testbed, one host's link cut for longer than the heartbeat time-out, then
    restored: the host is back in the run, its held results used, nothing that finished
    there while it was away finishes again after it is back (benchmarks/chaos_flap.py).

The workflow is benchmarks/chaos_workflow.py, run with ``taskflow run`` as a real
process. Every task writes ``s <identity>`` / ``e <identity>`` to a ledger, so
executions are counted per task; every value (results.json) and file is
compared with what it must be. One markdown table goes to stdout, the details
as JSON to stderr (and ``--json PATH``). The exit status is 1 when any check
failed (a wrong value or file, a run that did not finish, a task redone after
the resume that the killed master had recorded, a process left behind).

Scenario (b)'s bound: a task whose completion the killed master had recorded
(``resume.log``, written before the master acts on a result) is never run
again: "redone after resume" counts those and must be 0. Tasks that finished
on an executor but whose result had not reached the master's loop are "in
flight at the kill" and may run again: at most the tasks the master had sent
to nodes and not yet recorded, which is ``slots x (1 + prefetch)`` (prefetch 1
per slot for tasks of 5 ms and more, MASTER_DEEP = 256 for shorter ones:
wire/thresholds.py: the master never has more CUs outstanding on a node); the
JSON reports how many there were. A record whose value had stayed on its node
(``("h",)`` in the log: not kept) is rerun by design and counted apart
("rerun_value_on_node").
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

import psutil

from taskflow.wire.thresholds import MASTER_DEEP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chaos_workflow as W  # noqa: E402
from chaos_procs import (Watcher, agents_of, executors_of, kill_tree,  # noqa: E402
                         left_behind)

WORKFLOW = os.path.join(HERE, "chaos_workflow.py")
ROOT = os.path.dirname(HERE)
SSH_HOSTS = os.path.join(ROOT, "testbed", "ssh_hosts.sh")
RUN_TIMEOUT = 900.0          # s: a run that takes longer is reported as hung


def log(msg: str) -> None:
    print(f"[chaos] {msg}", file=sys.stderr, flush=True)


# -- one run's scratch directory, process and ledger ---------------------------------------
class Scratch:
    """A scenario's working directory: the ledger, the outputs, the run directory."""

    def __init__(self, root: str, name: str, tasks: int, nap: float) -> None:
        self.dir = os.path.join(root, name)
        n = 1
        while os.path.exists(self.dir):         # the same scenario again (--only b,b)
            n += 1
            self.dir = os.path.join(root, f"{name}{n}")
        os.makedirs(self.dir, mode=0o700)
        self.ledger = os.path.join(self.dir, "ledger")
        self.out = os.path.join(self.dir, "out")
        self.runs = os.path.join(self.dir, "runs")
        self.tasks = tasks
        self.shape = W.shape(tasks)
        self.env = dict(os.environ, CHAOS_LEDGER=self.ledger, CHAOS_NAP=str(nap),
                        TASKFLOW_RUN_DIR=self.runs)

    def start(self, *opts: str, tag: str = "run") -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "taskflow", "run", "--no-progress", *opts, WORKFLOW,
               str(self.tasks), self.out]
        log(f"{tag}: {' '.join(cmd[1:])}")
        out = open(os.path.join(self.dir, f"{tag}.stdout"), "wb")
        err = open(os.path.join(self.dir, f"{tag}.stderr"), "wb")
        try:
            return subprocess.Popen(cmd, cwd=self.dir, env=self.env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
        finally:
            out.close()
            err.close()

    def text(self, name: str) -> str:
        try:
            with open(os.path.join(self.dir, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def run_dirs(self) -> list[str]:
        try:
            return sorted(os.path.join(self.runs, d) for d in os.listdir(self.runs))
        except OSError:
            return []


class Ledger:
    """Reads the ledger as it grows: starts and ends per task identity."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pos = 0
        self.starts: Counter[str] = Counter()
        self.ends: Counter[str] = Counter()
        self._rest = b""

    def poll(self) -> int:
        """Read what was appended; return the number of ends so far."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return 0
        self.pos += len(data)
        data = self._rest + data
        lines = data.split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            kind, _, ident = raw.decode(errors="replace").partition(" ")
            (self.starts if kind == "s" else self.ends)[ident] += 1
        return sum(self.ends.values())


def wait_ends(ledger: Ledger, n: int, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Until ``n`` task ends are in the ledger (False if the run ended or time ran out)."""
    deadline = time.time() + timeout
    while ledger.poll() < n:
        if proc.poll() is not None or time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def wait_run(proc: subprocess.Popen[bytes], timeout: float = RUN_TIMEOUT) -> int | None:
    """The run's exit status, or None when it hung (it is then killed with its tree)."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        proc.wait()
        return None


# -- checks ----------------------------------------------------------------------------------
def check_outputs(s: Scratch) -> dict[str, Any]:
    """Every value and file against what it must be."""
    want = W.expected_values(s.shape)
    try:
        with open(os.path.join(s.out, "results.json")) as f:
            got = json.load(f)
    except (OSError, ValueError):
        got = {}
    wrong = sorted(k for k, v in want.items() if got.get(k) != v)
    bad_files = []
    for path, text in W.expected_files(s.shape, s.out).items():
        try:
            with open(path) as f:
                ok = f.read() == text
        except OSError:
            ok = False
        if not ok:
            bad_files.append(os.path.relpath(path, s.out))
    return {"values": len(want), "wrong_values": len(wrong), "wrong_examples": wrong[:5],
            "files": len(W.expected_files(s.shape, s.out)), "bad_files": len(bad_files),
            "bad_file_examples": bad_files[:5]}


def executions(ledger: Ledger, shape: W.Shape) -> dict[str, Any]:
    """Re-executions (starts beyond one per task) and tasks that never ran."""
    ledger.poll()
    idents = {c.ident for c in W.plan(shape)}
    never = [i for i in idents if ledger.starts[i] == 0]
    unfinished = [i for i in idents if ledger.ends[i] == 0]
    return {"executions": sum(ledger.starts.values()),
            "reexecuted": sum(max(0, n - 1) for n in ledger.starts.values()),
            "tasks_reexecuted": sum(1 for n in ledger.starts.values() if n > 1),
            "never_ran": len(never), "never_finished": len(unfinished)}


def journal_check(s: Scratch) -> dict[str, Any]:
    """The last run's journal: its state and its tasks' (every one must be DONE)."""
    runs = s.run_dirs()
    if not runs:
        return {"journal_state": None, "journal_tasks": {}, "journal_ok": False}
    import sqlite3
    db = sqlite3.connect(os.path.join(runs[-1], "journal.db"))
    try:
        states = dict(db.execute("SELECT state, COUNT(*) FROM task_rows GROUP BY state"))
        (state, retries), = db.execute("SELECT state, n_retries FROM run").fetchall()
    finally:
        db.close()
    return {"journal_state": state, "journal_tasks": states, "journal_retries": retries,
            "journal_ok": state == "finished" and states == {"DONE": s.shape.total}}


def verdict(res: dict[str, Any], more: dict[str, bool]) -> None:
    """``res["problems"]``: every check that failed; ``res["ok"]``: none did."""
    checks = {"the run did not finish (hung)": res["status"] is None,
              f"exit status {res['status']}": res["status"] not in (0, None),
              "wrong values": res["wrong_values"] > 0,
              "lost or wrong files": res["bad_files"] > 0,
              "tasks that never ran": res["never_ran"] > 0,
              "processes left behind": bool(res["left_behind"]),
              f"journal: run {res.get('journal_state')}, tasks {res.get('journal_tasks')}":
                  not res.get("journal_ok"),
              **more}
    res["problems"] = [what for what, failed in checks.items() if failed]
    res["ok"] = not res["problems"]


def summary_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if " finished in " in ln or " failed" in ln]
    return lines[-1].strip() if lines else err.strip().splitlines()[-1:][0] if err.strip() else ""


# -- (a) executors and agents killed -----------------------------------------------------------
def scenario_a(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    s = Scratch(root, "a", args.tasks, args.nap)
    workers = args.workers or 2 * args.nodes
    t0 = time.time()
    proc = s.start("--local-nodes", str(args.nodes), "--workers", str(workers),
                   "--crash-limit", str(args.crash_limit), tag="a")
    watch = Watcher(proc.pid)
    watch.start()
    ledger = Ledger(s.ledger)
    total = s.shape.total
    # the moments (in task ends) of each kill, spread over the first 85 % of the run
    marks = sorted(rng.uniform(0.03, 0.85) * total for _ in range(args.kills))
    agent_marks = sorted(rng.uniform(0.1, 0.7) * total for _ in range(args.agent_kills))
    plan = sorted([(m, "executor") for m in marks] + [(m, "agent") for m in agent_marks])
    kills: Counter[str] = Counter()
    events = []
    for mark, what in plan:
        if not wait_ends(ledger, int(mark), proc, RUN_TIMEOUT):
            break
        for _ in range(200):                # an executor may be between tasks: try others
            agents = agents_of(proc.pid)
            if what == "agent":
                victims = agents if len(agents) > 1 else []
            else:
                victims = [e for a in agents for e in executors_of(a)]
            if not victims:
                time.sleep(0.01)
                continue
            v = rng.choice(victims)
            try:
                v.send_signal(signal.SIGKILL)
            except psutil.Error:
                continue
            kills[what] += 1
            events.append((round(time.time() - t0, 2), what, v.pid))
            break
    status = wait_run(proc)
    wall = time.time() - t0
    left = left_behind(watch.procs(), 5.0)
    res = {"scenario": "a", "status": status, "wall": wall, "kills": dict(kills),
           "kill_events": events, "left_behind": left,
           "summary": summary_line(s.text("a.stderr")), **check_outputs(s),
           **executions(ledger, s.shape)}
    res.update(journal_check(s))
    verdict(res, {f"only {kills['executor']} executor kills landed": kills["executor"] < args.kills})
    if status != 0:
        res["stderr_tail"] = s.text("a.stderr")[-3000:]
    return res


# -- (b) the master killed, then resumed --------------------------------------------------------
def scenario_b(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from taskflow.runtime.recovery.restore import ResumeStore
    s = Scratch(root, "b", args.tasks, args.nap)
    workers = args.workers or 2 * args.nodes
    opts = ["--local-nodes", str(args.nodes), "--workers", str(workers)]
    t0 = time.time()
    # (--adopt-grace 0: the resume log's bound alone; adoption is scenario (e))
    proc = s.start("--resumable", "--adopt-grace", "0", *opts, tag="b-killed")
    watch = Watcher(proc.pid)
    watch.start()
    ledger = Ledger(s.ledger)
    at = rng.uniform(0.2, 0.8)
    reached = wait_ends(ledger, int(at * s.shape.total), proc, RUN_TIMEOUT)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    t_kill = time.time() - t0
    left = left_behind(watch.procs(), 10.0)
    ledger.poll()                 # everything the killed run's tasks wrote (all are gone)
    before_starts, before_ends = Counter(ledger.starts), Counter(ledger.ends)
    (run_dir,) = s.run_dirs()
    st = subprocess.run([sys.executable, "-m", "taskflow", "status", "--run-dir", s.runs],
                        cwd=s.dir, env=s.env, capture_output=True, text=True, timeout=60)
    status_says = (st.stdout.strip() or st.stderr.strip()).splitlines()[0]
    names = W.ordinals(s.shape)
    records = list(ResumeStore(run_dir).by_key.values())
    # a record whose value stayed on its node ("h") is not kept: the task runs again
    # (runtime/recovery/log.py), so it is counted apart from those a resume must restore
    recorded = {names[(r.name, r.ordinal)] for r in records
                if not any(o[0] == "h" for o in r.outputs)}
    left_on_node = {names[(r.name, r.ordinal)] for r in records} - recorded
    acted = journal_done(run_dir, names)
    t1 = time.time()
    proc2 = s.start("--resume", "--explain", *opts, tag="b-resumed")
    status = wait_run(proc2)
    wall = (time.time() - t1) + t_kill
    ledger.poll()
    after = ledger.starts - before_starts
    redone = sorted(i for i in after if i in recorded)
    finished_before = {i for i, n in before_ends.items() if n}
    in_flight = sorted(i for i in after if i in finished_before and i not in recorded
                       and i not in left_on_node)
    err = s.text("b-resumed.stderr")
    restored = next((ln.strip() for ln in err.splitlines() if "task(s) restored" in ln), "")
    res = {"scenario": "b", "status": status, "wall": wall, "killed_at": round(t_kill, 2),
           "killed_at_fraction": round(at, 3), "kill_reached_mark": reached,
           "left_behind": left, "status_after_kill": status_says,
           "finished_before_kill": len(finished_before), "recorded": len(recorded),
           "recorded_value_on_node": len(left_on_node),
           "rerun_value_on_node": sum(1 for i in after if i in left_on_node),
           "journal_done": len(acted),
           "journal_not_recorded": len(acted - recorded - left_on_node),
           "restored": restored, "ran_after_resume": sum(after.values()),
           "redone_recorded": len(redone), "redone_examples": redone[:5],
           "in_flight_rerun": len(in_flight), "in_flight_examples": in_flight[:5],
           "in_flight_bound": workers * (1 + MASTER_DEEP),
           "summary": summary_line(err), **check_outputs(s), **executions(ledger, s.shape),
           **journal_check(s)}
    verdict(res, {"a recorded task ran again after the resume": bool(redone),
                  "taskflow status did not say interrupted": ": interrupted" not in status_says,
                  "the journal shows done a task the resume log lacks":
                      bool(res["journal_not_recorded"])})
    if status != 0:
        res["stderr_tail"] = err[-3000:]
    return res


def journal_done(run_dir: str, names: dict[tuple[str, int], str]) -> set[str]:
    """Identities of the tasks the killed run's journal shows DONE (acted on: the journal
    is written after the master applied the result)."""
    from taskflow.journal.reader import Journal
    out: set[str] = set()
    seen: Counter[str] = Counter()
    with Journal(run_dir) as j:
        for t in sorted(j.tasks(), key=lambda t: t["id"]):
            seen[t["name"]] += 1
            if t["state"] == "DONE":
                out.add(names[(t["name"], seen[t["name"]])])
    return out


# -- (c) an SSH host's link cut and restored -----------------------------------------------------
def scenario_c(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from chaos_ssh import SSHTestbed
    s = Scratch(root, "c", args.tasks, args.nap)
    with SSHTestbed(2) as tb:
        cluster = os.path.join(s.dir, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(tb.cluster_file(s.dir, sys.executable, args.ssh_slots, args.ssh_shared_fs))
        t0 = time.time()
        proc = s.start("--cluster", cluster, "--crash-limit", str(args.crash_limit), tag="c")
        watch = Watcher(proc.pid)
        watch.start()
        ledger = Ledger(s.ledger)
        at = rng.uniform(0.2, 0.5)
        cut = wait_ends(ledger, int(at * s.shape.total), proc, RUN_TIMEOUT)
        t_cut = t_heal = None
        if cut:
            tb.cut(1)
            t_cut = time.time() - t0
            log(f"c: h1's link cut at {t_cut:.1f} s")
            deadline = time.time() + args.cut_seconds
            while time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            tb.heal(1)
            t_heal = time.time() - t0
            log(f"c: h1's link restored at {t_heal:.1f} s")
        status = wait_run(proc)
        wall = time.time() - t0
        left = left_behind(watch.procs(), 5.0)
        left_h1 = tb.leftovers(1, 20.0)
    err = s.text("c.stderr")
    res = {"scenario": "c", "status": status, "wall": wall, "cut_at": t_cut, "healed_at": t_heal,
           "cut_seconds": args.cut_seconds, "shared_fs": args.ssh_shared_fs,
           "left_behind": left + [f"h1: {p}" for p in left_h1],
           "node_lost": [ln.strip() for ln in err.splitlines() if "lost" in ln][:3],
           "summary": summary_line(err), **check_outputs(s), **executions(ledger, s.shape),
           **journal_check(s)}
    verdict(res, {"the run ended before the cut": not cut})
    if status != 0:
        res["stderr_tail"] = err[-3000:]
    return res


# -- (d) the only node agent killed ----------------------------------------------------------
def scenario_d(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    """The run must fail at once, saying no node is left: never hang, leave nothing."""
    s = Scratch(root, "d", args.tasks, args.nap)
    t0 = time.time()
    proc = s.start("--local-nodes", "1", "--crash-limit", str(args.crash_limit), tag="d")
    watch = Watcher(proc.pid)
    watch.start()
    ledger = Ledger(s.ledger)
    at = rng.uniform(0.1, 0.6)
    killed = False
    if wait_ends(ledger, int(at * s.shape.total), proc, RUN_TIMEOUT):
        for agent in agents_of(proc.pid):
            try:
                agent.send_signal(signal.SIGKILL)
                killed = True
            except psutil.Error:
                pass
    t_kill = time.time() - t0
    status = wait_run(proc, 120.0)
    wall = time.time() - t0
    left = left_behind(watch.procs(), 5.0)
    err = s.text("d.stderr")
    said = next((ln.strip() for ln in err.splitlines() if "no nodes left" in ln), "")
    res = {"scenario": "d", "status": status, "wall": wall, "killed_at": round(t_kill, 2),
           "killed_at_fraction": round(at, 3), "left_behind": left,
           "failed_after_kill": round(wall - t_kill, 2), "says": said,
           "summary": summary_line(err), **executions(ledger, s.shape)}
    checks = {"the run did not end (hung)": status is None,
              f"exit status {status}, not 1": status not in (1, None),
              "no 'no nodes left' error": not said,
              "processes left behind": bool(left),
              "the agent was not killed (the run ended first)": not killed}
    res["problems"] = [what for what, failed in checks.items() if failed]
    res["ok"] = not res["problems"]
    if res["problems"]:
        res["stderr_tail"] = err[-3000:]
    return res


# -- the table -------------------------------------------------------------------------------
def row(r: dict[str, Any]) -> list[str]:
    sc = r["scenario"]
    if sc == "a":
        k = r["kills"]
        kills = f"{k.get('executor', 0)} executors + {k.get('agent', 0)} agents"
    elif sc == "b":
        kills = f"master at {r['killed_at_fraction']:.0%} of tasks"
    elif sc == "c":
        kills = f"h1 link cut {r['cut_seconds']:g} s" if r.get("cut_at") else "no cut (run ended)"
    elif sc == "g":
        kills = (f"h1 link cut {r['cut_seconds']:g} s, {r['tasks']} tasks; "
                 f"{r['back'] or 'h1 NOT back'}; {r['finished_twice']} finished twice "
                 f"({r['finished_twice_after_back']} after h1 was back)")
    elif sc == "e" or sc.startswith("f-"):
        kills = (f"master at {r['killed_at_fraction']:.0%} of {r['tasks']} tasks of "
                 f"{r['seconds']:g} s, {r['running_at_kill']} running"
                 + (f" (Slurm {sc[2:]})" if sc != "e" else ""))
    else:
        kills = f"the only agent at {r['killed_at_fraction']:.0%} of tasks"
    if sc == "d":       # the run fails by design: how fast, and what it said
        wall = (f"failed {r['failed_after_kill']:.1f} s after the kill" if r["status"] is not None
                else f"hung ({r['wall']:.0f})")
        return [sc, kills, str(r["reexecuted"]), "-", "-", "-", wall,
                "yes" if r["ok"] else "**NO**: " + "; ".join(r["problems"])]
    adopting = sc == "e" or sc.startswith("f-")
    redone = "-" if sc != "b" and not adopting else r["adopted"].split(": ", 1)[-1] if adopting \
        else (f"{r['redone_recorded']} of {r['recorded']} recorded; "
                                    f"{r['in_flight_rerun']} in flight (bound "
                                    f"{r['in_flight_bound']})")
    wall = f"{r['wall']:.1f}" if r["status"] is not None else f"hung ({r['wall']:.0f})"
    return [sc, kills, str(r["reexecuted"]), str(r["wrong_values"]),
            str(r["bad_files"]), redone, wall,
            "yes" if r["ok"] else "**NO**: " + "; ".join(r["problems"])]


HEAD = ["run", "kills", "tasks re-executed", "wrong values", "lost or wrong files",
        "redone after resume", "wall s", "all checks"]


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(row(r)) + " |" for r in results]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--kills", type=int, default=15, help="executor kills in (a), at least")
    ap.add_argument("--agent-kills", type=int, default=1, help="whole node agents killed in (a)")
    ap.add_argument("--nodes", type=int, default=3, help="local node agents in (a) and (b)")
    ap.add_argument("--workers", type=int, default=None, help="slots in (a), (b) (2 per node)")
    ap.add_argument("--crash-limit", type=int, default=3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--only", default="a,b,c,d")
    ap.add_argument("--nap", type=float, default=0.002, help="s each Python task sleeps")
    ap.add_argument("--cut-seconds", type=float, default=8.0,
                    help="(c), (g): how long the link is down")
    ap.add_argument("--ssh-slots", type=int, default=2, help="(c), (e): slots per SSH host")
    ap.add_argument("--adopt-tasks", type=int, default=120, help="(e): tasks")
    ap.add_argument("--adopt-seconds", type=float, default=3.0, help="(e), (f): s each task runs")
    ap.add_argument("--slurm-tasks", type=int, default=60, help="(f): tasks per mode")
    ap.add_argument("--flap-tasks", type=int, default=24, help="(g): tasks")
    ap.add_argument("--flap-seconds", type=float, default=4.0,
                    help="(g): s most tasks run (about a third: 5 times as long)")
    ap.add_argument("--flap-cut-after", type=float, default=0.05,
                    help="(g): the fraction of tasks ended when the link is cut")
    ap.add_argument("--ssh-shared-fs", action="store_true",
                    help="(c): the hosts share the filesystem (else files go over SFTP)")
    ap.add_argument("--json", default=None, help="also write the JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directories")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix="taskflow-chaos-")
    log(f"seed {seed}, scratch {root}")
    results = []
    from chaos_adopt import scenario_e
    from chaos_flap import scenario_g
    from chaos_slurm import scenario_f
    scenarios: dict[str, Any] = {"a": scenario_a, "b": scenario_b, "c": scenario_c,
                                 "d": scenario_d, "e": scenario_e, "f": scenario_f,
                                 "g": scenario_g}
    try:
        for name in args.only.split(","):
            log(f"scenario {name}")
            got = scenarios[name.strip()](root, args, rng)
            for r in got if isinstance(got, list) else [got]:      # (f: batch and pilot)
                log(json.dumps({k: v for k, v in r.items() if k != "stderr_tail"}))
                results.append(r)
    finally:
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(table(results))
    doc = {"seed": seed, "tasks": args.tasks, "shape": W.shape(args.tasks)._asdict(),
           "results": results}
    print(json.dumps(doc), file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
