"""What the record says after a run: why tasks ran again (status, logs, report, trace), and
every task's lines in the order they were written."""
from __future__ import annotations

import json
import os
import subprocess
import sys

FLAKY = '''
import os
from taskflow import task, wait_on

@task(returns=1, retries=3)
def flaky(marker):
    n = len(os.listdir(marker))
    open(os.path.join(marker, str(n)), "w").close()
    if n < 2:
        raise ValueError(f"attempt {n} fails")
    return n

@task(returns=1, retries=1)
def hopeless(x):
    raise KeyError(f"never {x}")

os.makedirs("m", exist_ok=True)
print(wait_on(flaky("m")))
hopeless(1)
'''


def _tf(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "taskflow", *args, "--run-dir",
                           str(tmp_path / "runs")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_each_retry_says_why(tmp_path):
    (tmp_path / "wf.py").write_text(FLAKY)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1 and r.stdout.strip() == "2"
    (run_id,) = os.listdir(tmp_path / "runs")
    st = _tf(tmp_path, "status", run_id).stdout
    assert "ran again:" in st
    assert ("  task 1 flaky: 2 time(s)\n    on local: ValueError: attempt 0 fails\n"
            "    on local: ValueError: attempt 1 fails\n") in st
    assert "  task 2 hopeless: 1 time(s)\n    on local: KeyError: 'never 1'\n" in st
    logs = _tf(tmp_path, "logs", run_id, "1").stdout
    assert "-- attempt 1 on local ended: ValueError: attempt 0 fails; it ran again" in logs
    assert "-- attempt 2 on local ended: ValueError: attempt 1 fails; it ran again" in logs
    report = _tf(tmp_path, "report", run_id).stdout
    assert "### Ran again" in report and "    - on local: ValueError: attempt 1 fails" in report
    _tf(tmp_path, "trace", run_id)
    with open(tmp_path / "runs" / run_id / "trace.json") as f:
        trace = json.load(f)
    retries = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert sorted((e["args"]["id"], e["args"]["attempt"], e["args"]["why"]) for e in retries) \
        == [(1, 1, "ValueError: attempt 0 fails"), (1, 2, "ValueError: attempt 1 fails"),
            (2, 1, "KeyError: 'never 1'")]


INTERLEAVED = '''
import os
import time
from taskflow import task, wait_on

@task(returns=1)
def slow(gate):
    print("slow starts", flush=True)
    open(gate + ".started", "w").close()
    while not os.path.exists(gate):
        time.sleep(0.01)
    print("slow ends", flush=True)
    return 1

@task(returns=1)
def quick(gate):
    while not os.path.exists(gate + ".started"):    # after slow's first line
        time.sleep(0.01)
    print("quick says", flush=True)
    open(gate, "w").close()      # slow ends after this line: its lines come last
    return 2

print(wait_on([quick("gate"), slow("gate")]))
'''


def test_logs_of_all_tasks_come_in_time_order(tmp_path):
    """The journal keeps a task's lines in one batch when it ends (quick's before slow's
    here); `taskflow logs RUN` prints them in the order they were written."""
    (tmp_path / "wf.py").write_text(INTERLEAVED)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    out = _tf(tmp_path, "logs", run_id).stdout.splitlines()
    said = [ln.split("STDOUT", 1)[1].strip() for ln in out if "STDOUT" in ln]
    assert said == ["slow starts", "quick says", "slow ends"], out


def test_logs_of_a_run_whose_tasks_printed_nothing_say_so(tmp_path):
    (tmp_path / "wf.py").write_text("from taskflow import task, wait_on\n"
                                    "@task(returns=1)\ndef f(x):\n    return x\n"
                                    "wait_on(f(1))\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    out = _tf(tmp_path, "logs", run_id)
    assert out.returncode == 0
    assert out.stdout == (f"-- no task of run {run_id} (finished, 1 task(s)) wrote output lines "
                          f"to the journal; a program's output files: taskflow logs RUN TASK\n")


def test_the_report_gives_the_exit_status_the_run_ended_with(tmp_path):
    (tmp_path / "wf.py").write_text(
        "import sys\nfrom taskflow import task, wait_on\n@task(returns=1)\ndef one():\n"
        "    return 1\nwait_on(one())\nsys.exit(3)\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    rep = _tf(tmp_path, "report")
    assert rep.returncode == 0, rep.stderr
    assert "| exit status | 3 |" in rep.stdout, rep.stdout


def test_the_exit_status_read_back_from_the_runs_end():
    from taskflow.runtime.verdict import status_of
    assert status_of("finished", None) == 0
    assert status_of("interrupted", "SIGTERM") == 143
    assert status_of("interrupted", "KeyboardInterrupt") == 130
    assert status_of("failed", "the script exited with status 7") == 7
    assert status_of("failed", "the program stopped the run with code 4") == 4
    assert status_of("failed", "task bad (id 2) failed: ValueError: nope") == 1
    assert status_of("interrupted", "the allocation ended") is None


def test_moving_a_large_value_is_said_in_status_logs_and_report(tmp_path):
    (tmp_path / "wf.py").write_text(
        "from taskflow import task, wait_on\n@task(returns=1)\ndef big():\n"
        "    return b'x' * 3_000_000\nprint(len(wait_on(big())))\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "3000000", r.stderr
    st = _tf(tmp_path, "status").stdout
    assert "values moved: 1 to the master (3 MB, " in st, st
    assert "  the value of task 1 big: 3 MB from local to the master in " in st, st
    (run_id,) = os.listdir(tmp_path / "runs")
    logs = _tf(tmp_path, "logs", run_id, "1").stdout
    assert "-- moved: the value of task 1 big: 3 MB from local to the master in " in logs, logs
    rep = _tf(tmp_path, "report").stdout
    assert "## Moving values" in rep and "Values moved: 1 to the master (3 MB" in rep, rep
