"""PyCOMPSs applications run unchanged: ``taskflow run --compat pycompss`` as a real subprocess.

Each application under tests/compat/compat_apps/ exercises one item of issue 17 and
prints ``RESULT <python literal>``; the tests check that literal, the files
the application wrote, the exit status and runcompss's closing line.
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from support.pycompss_apps import DASHES, journal, needs_mpi, ok, result, run_app


# -- the API ----------------------------------------------------------------------------

def test_tasks_that_call_tasks_run_them_inline_as_runcompss_does(tmp_path):
    """A recursive PyCOMPSs task (defined in the script: it travels by value and refers to
    itself), and a task unpacking its returns=2 call: under runcompss, outside its agents
    mode, a task called in a task runs inline (PyCOMPSs's 7_task_in_task adds the values
    such calls return), so it does here too: no child tasks."""
    out = ok(run_app("app_calls_tasks.py", cwd=tmp_path))
    assert out == {"fib": 55, "pair": 12}
    with journal(tmp_path) as db:
        calls = db.execute("SELECT COUNT(*) FROM children").fetchone()[0]
        tasks = db.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    assert calls == 0 and tasks == 2        # fib(10) and product_of_pair(3): the rest inline


def test_returns_in_every_form(tmp_path):
    out = ok(run_app("app_returns.py", cwd=tmp_path))
    assert out["typed"] == 2
    assert out["two_type"] == "list" and out["two"] == [5, 10]     # read from `return a, b`
    assert out["none"] is None                                     # no return: the call gives None
    assert out["counted"] == [4, -4] and out["counted_str"] == [7, 7]
    assert out["global"] == [10, 11, 12] and out["global2"] == [10, 11]   # read at each call
    assert out["param"] == [0, 1, 2, 3]                            # value_of(spec.n)
    assert out["stand_in"] == "Point" and out["norm1"] == 7 and out["point"] == [3, -4]
    assert out["override"] == [0, 1, 2]                            # f(x, returns=3)
    assert out["hinted"] == [6, 6]                                 # -> tuple[int, int]


def test_api_calls_and_their_shapes(tmp_path):
    # (runs are resumable by default: compss_snapshot's word about a run that is not)
    r = run_app("app_api.py", cwd=tmp_path, options=("--workers", "2", "--no-resumable"))
    out = ok(r)
    assert out["nested"] == {"a": [2, (3, 4)], "b": {"c": 5}}
    assert out["several"] == [11, 21]
    assert out["wait_file"] == ["f1.txt", ("f2.txt", "f3.txt")]
    assert out["exists"] == [True, [False, True]] and out["exists_one"] is True
    assert out["wait_dir"] == "dir_out" and out["dir"] == ["part"]
    assert out["open"] == "hello"
    assert out["delete"] == [True, True] and out["deleted"] == [False, False]
    assert out["delete_obj"] is True
    assert out["resources"] == 1
    assert out["group"] == [1, 2, 3] and out["after_barrier"] == 100
    assert "compss_request_resources(1): this run's nodes are fixed" in r.stderr
    assert "this run is not resumable" in r.stderr              # compss_snapshot says so


def test_parameters_all_forms(tmp_path):
    out = ok(run_app("app_parameters.py", cwd=tmp_path))
    assert out["collection_inout"] == [10, 20]
    assert out["dict_in"] == 2 and out["dict_inout"] == [("x", 2), ("y", 6)]
    assert out["depth1"] == 2 and out["deep_leaves"] == 4
    assert out["collection_file"] == 3
    assert out["old_form"] == "old" and out["lines"] == ["one", "two"]
    assert out["log"] == ["first", "second"]          # FILE_CONCURRENT_STDOUT appends
    assert out["stdout"] == "plain" and out["stdout_dict"] == "dict"
    assert out["camel"] == 5
    assert out["varargs_files"] == 9                  # varargs_type=FILE_IN: 3 x "old"


def test_semantic_differences(tmp_path):
    out = ok(run_app("app_semantics.py", cwd=tmp_path))
    assert out["counter"] == 7                        # 1. self is INOUT
    assert out["none_file"] == -1 and out["file"] == 2   # 3. None for a FILE parameter
    assert out["dir_existed"] == "False"              # 4. DIRECTORY_OUT made by the task
    assert out["deep"] == 10                          # 5. any collection depth
    assert out["binary_none"] is None and out["exit_code"] == 3   # 6.
    # 7. each value is one argument (COMPSs escapes its spaces before bash -c: never split
    # nor globbed); the template's own words are read as bash reads them (its glob too)
    assert out["words"] == "-n 4|*.dat|a.dat|b.dat|"
    con = journal(tmp_path)                           # 8. output in the journal only
    lines = [r[0] for r in con.execute("SELECT line FROM logs")]
    assert "TASK OUTPUT 1" in lines


def test_shell_syntax_in_a_value_is_one_argument_redirections_in_a_template(tmp_path):
    """A value is one argument, whatever it holds; the template's redirections are the
    program's streams (bash -c in COMPSs); its pipes and lists are refused, naming the
    decorator."""
    app = tmp_path / "redirect.py"
    app.write_text("from pycompss.api.api import compss_barrier\n"
                   "from pycompss.api.binary import binary\n"
                   "from pycompss.api.parameter import FILE_OUT, FILE_OUT_STDOUT\n"
                   "from pycompss.api.task import task\n"
                   "@binary(binary='echo')\n@task(out=FILE_OUT_STDOUT)\ndef e(x, out):\n"
                   "    pass\n"
                   "@binary(binary='sh', args='-c {{script}} > {{out}} 2>&1')\n"
                   "@task(out=FILE_OUT)\ndef both(script, out):\n    pass\n"
                   "e('hello > out.txt; rm -rf ~', 'printed.txt')\n"
                   "both('echo to-out; echo to-err >&2', 'both.txt')\n"
                   "compss_barrier()\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--compat", "pycompss",
                        str(app)], cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "printed.txt").read_text() == "hello > out.txt; rm -rf ~\n"
    assert not (tmp_path / "out.txt").exists()
    assert sorted((tmp_path / "both.txt").read_text().split()) == ["to-err", "to-out"]
    app.write_text("from pycompss.api.binary import binary\n"
                   "from pycompss.api.task import task\n"
                   "@binary(binary='echo', args='{{x}} | wc -l')\n@task()\ndef e(x):\n"
                   "    pass\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--compat", "pycompss",
                        str(app)], cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "@binary on e: args='{{x}} | wc -l'" in r.stderr and "FILE_OUT_STDOUT" in r.stderr
    assert "Error running application" in r.stdout and r.stdout.rstrip().endswith(DASHES)


def test_compss_exception_cancels_the_group(tmp_path):
    out = ok(run_app("app_exception.py", cwd=tmp_path))
    assert out["caught"] == "3 found" and out["late"] == "3 found"
    assert out["fast"] and out["program_killed"]      # the running program got SIGTERM
    assert out["runs_of_3"] == 2                      # once per group: never retried
    assert out["goes_on"] == 40


def test_cancel_group_and_stop_code(tmp_path):
    out = ok(run_app("app_cancel.py", "cancel", cwd=tmp_path))
    assert out == {"cancelled": 4, "fast": True, "after": 2, "program_killed": True}
    # compss_stop(3) cancels every waiting and running task; as in PyCOMPSs the code is
    # not the exit status: the application then ends normally, so runcompss exits 0
    r = run_app("app_cancel.py", "3", cwd=tmp_path)
    assert result(r) == {"fast": True}
    assert r.returncode == 0 and "Error running application" not in r.stdout
    assert r.stdout.rstrip().endswith(DASHES)
    assert not (tmp_path / "m2.txt").exists()
    assert "2 cancelled" in r.stderr


def test_constraints_read_at_each_call_and_recorded(tmp_path):
    out = ok(run_app("app_constraint.py", cwd=tmp_path))
    assert out["param"] == 2 and out["expression"] == 1 and out["env"] == "env"
    assert "needs computing_units=5" in out["too_big"]
    specs = {}
    for name, cons in journal(tmp_path).execute("SELECT name, constraints FROM specs"):
        specs.setdefault(name, []).append(json.loads(cons))
    assert sorted(c["computing_units"] for c in specs["from_global"]) == [1, 2]
    assert specs["from_expression"][0]["computing_units"] == 2
    rec = specs["recorded"][0]["recorded"]
    assert rec["processor_architecture"] == "amd64" and rec["processor_speed"] == 2.5
    assert rec["app_software"] == "numpy"


def test_on_failure_defaults(tmp_path):
    out = ok(run_app("app_failure.py", cwd=tmp_path))
    assert out == {"ignored": 0, "file": "DEFAULT", "inout": [-1], "cancelled_successor": None}


def test_other_decorators(tmp_path):
    out = ok(run_app("app_decorators.py", cwd=tmp_path))
    assert out["implement"] == "alternative:3"        # the main one needs 64 units
    assert out["reduction"] == 285
    assert out["local"] == [2, 4, 6, 2, 2, 2]
    assert out["io"] == 3 and out["prolog"] is True and out["epilog"] is True
    con = journal(tmp_path)
    reducers = con.execute("SELECT COUNT(*) FROM tasks WHERE name='total'").fetchone()[0]
    assert reducers == 11         # chunks of 2: 10 values -> 5 tasks -> 3 -> 2 -> 1


@needs_mpi
def test_mpi_ompss_multinode_mpmd(tmp_path):
    out = ok(run_app("app_programs.py", cwd=tmp_path))
    assert out["python_mpi"] == [0, 10] and out["per_rank"] == [100, 101]
    assert out["echo"] == ["hello world|", "hello world|"]    # NP ranks; one argument
    assert out["scaled"] == ["x", "x"]                # scale_by_cu: 1 process x 2 units
    assert out["mpmd"] == ["first:A a|", "second:B|"]
    assert out["threads"] == "2" and out["multinode"] == "1:1"


def test_functions(tmp_path):
    out = ok(run_app("app_functions.py", cwd=tmp_path))
    assert out["merge_reduce"] == 91 and out["merge_n_reduce"] == 45
    assert out["map"] == [1, 4, 9] and out["timeit"] == [499500, True]
    assert out["generator"] == [4, [3, 3, 3, 3], 3, True] and out["generator_seeded"]
    assert out["generator_rows"]          # each fragment: random.seed(seed), then its rows


def test_software_json(tmp_path):
    out = ok(run_app("app_software.py", cwd=tmp_path))
    assert out == {"exit": 0, "made": "hello", "copy": "hello", "size": 5}


def test_nested_application(tmp_path):
    out = ok(run_app("app_nested.py", cwd=tmp_path))
    assert out == {"exit": 0, "total": "20", "bad_exit": 4}
    runs = os.path.join(str(tmp_path), ".taskflow", "runs")
    (parent,) = os.listdir(runs)
    nested = sorted(os.listdir(os.path.join(runs, parent, "nested")))
    assert nested == [f"{parent}-t1", f"{parent}-t2"]
    con = sqlite3.connect(os.path.join(runs, parent, "nested", nested[0], "journal.db"))
    assert con.execute("SELECT COUNT(*) FROM tasks WHERE state='DONE'").fetchone()[0] == 5
    logs = [r[0] for r in journal(tmp_path).execute("SELECT line FROM logs")]
    assert any(f"nested run {parent}-t1" in line for line in logs)


class _Service(http.server.BaseHTTPRequestHandler):
    def _send(self, code: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        parts = self.path.strip("/").split("/")
        if len(parts) >= 2 and parts[-2] == "length":
            self._send(200, {"length": len(parts[-1])})
        else:
            self._send(404, {"error": "no such resource"})

    def do_POST(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length", 0))
        self._send(200, {"got": json.loads(self.rfile.read(n))})

    def log_message(self, *args: object) -> None:
        pass


def test_http_tasks_from_the_resources_file(tmp_path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        (tmp_path / "resources.xml").write_text(f"""<?xml version="1.0"?>
<ResourcesList>
  <ComputeNode Name="localhost">
    <Processor Name="MainProcessor"><ComputingUnits>2</ComputingUnits></Processor>
  </ComputeNode>
  <Http BaseUrl="http://127.0.0.1:{srv.server_address[1]}/api/">
    <ServiceName>service_1</ServiceName>
  </Http>
</ResourcesList>""")
        r = run_app("app_http.py", cwd=tmp_path, options=("--resources=resources.xml",))
    finally:
        srv.shutdown()
    out = result(r)
    assert out["raw"] == '{"length": 5}' and out["length"] == 4
    assert out["post"] == [1, [2, 3]]
    assert out["updates"] == {"name": "e", "size": 3}
    assert out["error"] is True                       # 404: the task failed, saying so
    assert r.returncode == 1 and "answered HTTP 404 Not Found" in r.stderr


def test_unsupported_pieces_fail_naming_themselves(tmp_path):
    r = run_app("app_unsupported.py", cwd=tmp_path)
    assert r.returncode == 0
    seen = dict(line.split(" ", 2)[1:] for line in r.stdout.splitlines()
                if line.startswith("UNSUPPORTED "))
    assert len(seen) == 7
    for name, text in seen.items():
        assert "no error" not in text, name
        assert "not supported" in text or "does not provide" in text, (name, text)
    assert seen["storage"].startswith("| NotProvided")               # an ImportError
    assert "external streams" in seen["external_stream"]
    # modules that only define names import: classes.Future is taskflow's future
    assert "IMPORTED taskflow.future True True" in r.stdout


def test_application_in_several_modules_and_set_wall_clock(tmp_path):
    """Tasks of a module beside the script load on the workers, whose `from pycompss...`
    resolves there too; compss_set_wall_clock stops the application from inside."""
    out = ok(run_app("app_modules.py", cwd=tmp_path))
    assert out == {"acc": [1, 2], "pair": [4, 2], "returned": "some/path.txt",
                   "file": "written", "params": "x y"}      # @binary(params=...)
    t0 = time.time()
    r = run_app("app_modules.py", "limit", cwd=tmp_path)
    assert time.time() - t0 < 25 and r.returncode == 1
    assert "wall clock limit of 1 s reached" in r.stderr and "not reached" not in r.stdout


# -- the launcher -----------------------------------------------------------------------

def test_launcher_globals_env_script_summary_graph_trace(tmp_path):
    (tmp_path / "env.sh").write_text('export APP_SETTING="from env script"\n')
    r = run_app("app_launcher.py", "ok", cwd=tmp_path,
                options=("--env_script=env.sh", "--summary", "-g", "-t", "--log_level=info",
                         "--lang=python", "--jvm_workers_opts=-Xmx1g"))
    out = ok(r)
    assert out == {"app_path": True, "env": "from env script", "os": True}
    assert "----------------- Executing app_launcher.py" in r.stdout
    assert "env_value: 1 done" in r.stdout                       # --summary
    assert "--jvm_workers_opts=-Xmx1g: a COMPSs runtime option with no effect" in r.stderr
    runs = os.path.join(str(tmp_path), ".taskflow", "runs")
    (run,) = os.listdir(runs)
    files = os.listdir(os.path.join(runs, run))
    assert {"graph.dot", "trace.json"} <= set(files)


def test_launcher_error_and_wall_clock_limit(tmp_path):
    r = run_app("app_launcher.py", "raise", cwd=tmp_path)
    assert r.returncode == 1 and "the application failed on purpose" in r.stderr
    assert r.stdout.rstrip().endswith("Error running application\n" + DASHES)
    t0 = time.time()
    r = run_app("app_launcher.py", "sleep", cwd=tmp_path, options=("--wall_clock_limit=2",))
    assert time.time() - t0 < 25
    assert r.returncode == 1 and "wall clock limit of 2 s reached" in r.stderr
    assert "RESULT" not in r.stdout and r.stdout.rstrip().endswith(DASHES)


def test_project_and_resources_files_make_the_nodes(tmp_path):
    (tmp_path / "project.xml").write_text("""<Project>
  <MasterNode/>
  <ComputeNode Name="localhost"><InstallDir>/opt/COMPSs/</InstallDir>
    <WorkingDir>/tmp/Worker/</WorkingDir><LimitOfTasks>3</LimitOfTasks></ComputeNode>
</Project>""")
    (tmp_path / "resources.xml").write_text("""<ResourcesList>
  <ComputeNode Name="localhost"><Processor Name="P"><ComputingUnits>4</ComputingUnits>
  </Processor><Memory><Size>2</Size></Memory></ComputeNode>
</ResourcesList>""")
    r = run_app("app_launcher.py", "ok", cwd=tmp_path,
                options=("--project=project.xml", "--resources", "resources.xml"))
    ok(r)
    assert "1 node(s), 3 slot(s)" in r.stderr                    # min(ComputingUnits, Limit)
    (tmp_path / "bad.xml").write_text("<Project><ComputeNode Name='elsewhere'/></Project>")
    r = run_app("app_launcher.py", "ok", cwd=tmp_path,
                options=("--project=bad.xml", "--resources=resources.xml"))
    assert r.returncode == 2 and "'elsewhere' is not described in" in r.stderr
    assert r.stdout.rstrip().endswith(DASHES)


def test_a_real_pycompss_is_not_shadowed_unless_forced(tmp_path):
    fake = tmp_path / "site" / "pycompss"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    env = {"PYTHONPATH": str(tmp_path / "site")}
    r = run_app("app_launcher.py", "ok", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "a real PyCOMPSs is installed" in r.stderr
    assert "--compat-force" in r.stderr
    ok(run_app("app_launcher.py", "ok", cwd=tmp_path, env=env,
               options=("--compat-force", "--workers", "2")))


def test_replicated_task_runs_on_every_node(tmp_path):
    out = ok(run_app("app_replicated.py", cwd=tmp_path, options=("--workers", "2", "--nodes", "2")))
    assert out["copies"] == 2 and out["agents"] == 2 and out["value"] == "done"


# -- the same application without the layer -------------------------------------------

@pytest.mark.parametrize("compat", [True, False])
def test_portable_application_under_both_launchers(tmp_path, compat):
    r = run_app("app_portable.py", cwd=tmp_path, compat=compat)
    assert r.returncode == 0, r.stderr
    out = result(r)
    assert out == {"squares": 30, "acc": [1, 2], "file": "30", "groups": [0, 1, 2]}
    # taskflow's own default outside compat mode: what tasks print reaches the terminal
    assert ("printed by a task" in r.stdout) is (not compat)
    assert r.stdout.rstrip().endswith(DASHES) is compat


def test_plain_taskflow_does_not_alias_pycompss(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import taskflow; taskflow.task\n"
                        "import pycompss"], capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 1 and "No module named 'pycompss'" in r.stderr


# -- SSH nodes from a project file ------------------------------------------------------

def test_remote_compute_node_from_project_file(ssh_hosts, tmp_path):
    """A ComputeNode that is not this host is an SSH node: User, WorkingDir, and InstallDir
    (a virtualenv with taskflow: its bin/ first on PATH) from project.xml."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(ssh_hosts.key, home / ".ssh" / "id_ed25519")
    os.chmod(home / ".ssh" / "id_ed25519", 0o600)
    shutil.copy(ssh_hosts.known_hosts, home / ".ssh" / "known_hosts")
    venv = os.path.dirname(os.path.dirname(sys.executable))
    host = ssh_hosts.hosts[0]
    (tmp_path / "project.xml").write_text(f"""<Project><MasterNode/>
  <ComputeNode Name="{host}"><InstallDir>{venv}</InstallDir>
    <WorkingDir>{tmp_path / 'remote-wd'}</WorkingDir><User>root</User>
    <LimitOfTasks>2</LimitOfTasks></ComputeNode>
</Project>""")
    (tmp_path / "resources.xml").write_text(f"""<ResourcesList>
  <ComputeNode Name="{host}"><Processor Name="P"><ComputingUnits>2</ComputingUnits>
  </Processor></ComputeNode></ResourcesList>""")
    r = run_app("app_portable.py", cwd=tmp_path, env={"HOME": str(home)},
                options=("--project=project.xml", "--resources=resources.xml"))
    out = ok(r)
    assert out["squares"] == 30
    assert "1 node(s), 2 slot(s)" in r.stderr
    nodes = [n for (n,) in journal(tmp_path).execute("SELECT DISTINCT node FROM tasks")]
    assert nodes == [host]


def test_streams_as_pycompss_documents_them(tmp_path):
    """An ObjectDistroStream with a producer and two consumer tasks on 2 slots (a consumer
    that polls lends its slot: the producer starts), the main program polling a stream named
    by its alias, and a @binary filling a FileDistroStream's directory."""
    out = ok(run_app("app_streams.py", cwd=tmp_path))
    assert out == {"objects": list(range(50)), "each_in_order": True, "main": list(range(5)),
                   "files": [f"file {i}" for i in range(4)], "type": "FILE"}
    with journal(tmp_path) as db:
        rows = db.execute("SELECT kind, items, error FROM streams ORDER BY t_open").fetchall()
    assert rows == [("objects", 50, ""), ("objects", 5, ""), ("files", 4, "")]
