"""First contact: misspelt keywords get a "did you mean", the CLI's options fit together."""
from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from taskflow import FILE_IN, binary, constraint, container, mpi, multinode, ompss, task
from taskflow.cli import main
from taskflow.errors import UsageError


def f(x):
    return x


@pytest.mark.parametrize("deco, answer", [
    (lambda: task(retruns=int)(f), "'retruns' is not a parameter of f(x) nor a keyword of "
                                   "@task. Did you mean 'returns'?"),
    (lambda: task(time_outt=5)(f), "Did you mean 'time_out'?"),
    (lambda: task(onfailure="IGNORE")(f), "Did you mean 'on_failure'?"),
    (lambda: task(retires=2)(f), "Did you mean 'retries'?"),
    (lambda: task(xx=FILE_IN)(f), "Did you mean 'x'?"),                 # a parameter
    (lambda: constraint(computing_unit=2), "@constraint: unknown argument 'computing_unit'. "
                                           "Did you mean 'computing_units'?"),
    (lambda: constraint(memorysize=2), "Did you mean 'memory_size'?"),
    (lambda: binary(binry="/bin/true"), "@binary: unknown argument 'binry'. Did you mean "
                                        "'binary'?"),
    (lambda: binary(binary="/bin/true", workdir="/tmp"), "Did you mean 'working_dir'?"),
    (lambda: mpi(runer="mpirun"), "@mpi: unknown argument 'runer'. Did you mean 'runner'?"),
    (lambda: mpi(runner="mpirun", processes_per_nod=2), "Did you mean 'processes_per_node'?"),
    (lambda: ompss(binary="x", computing_node=2), "Did you mean 'computing_nodes'?"),
    (lambda: multinode(computing_node=2), "Did you mean 'computing_nodes'?"),
    (lambda: container(engine="podman", image="i", option="-x"), "Did you mean 'options'?"),
])
def test_a_misspelt_keyword_gets_the_word_it_misspells(deco, answer):
    with pytest.raises(UsageError) as ei:
        deco()
    assert answer in str(ei.value), str(ei.value)


def test_nothing_close_gets_no_guess_but_the_list():
    with pytest.raises(UsageError) as ei:
        constraint(gpus=1)
    msg = str(ei.value)
    assert "Did you mean" not in msg and "Known: computing_units, memory_size, " in msg
    with pytest.raises(UsageError) as ei:
        task(zzz=int)(f)
    assert "Did you mean" not in str(ei.value) and "returns/priority/time_out" in str(ei.value)


# -- the command line ---------------------------------------------------------------------
def _options() -> list[tuple[str, click.Option]]:
    return [(name, p) for name, cmd in main.commands.items() for p in cmd.params
            if isinstance(p, click.Option) and not p.hidden]


def test_one_meaning_per_short_option_across_commands():
    meaning: dict[str, set[str]] = {}
    for _, p in _options():
        longs = [o for o in p.opts if o.startswith("--")]
        for o in p.opts:
            if not o.startswith("--"):
                meaning.setdefault(o, set()).update(longs)
    assert meaning, "no short options at all?"
    for short, longs in meaning.items():
        assert len(longs) == 1, (short, longs)
    # sbatch's letters in submit; none of them means anything else anywhere
    assert meaning["-t"] == {"--time"} and meaning["-p"] == {"--partition"}
    assert meaning["-N"] == {"--nodes"}


def test_every_command_has_an_example():
    for name, cmd in [("taskflow", main), *main.commands.items()]:
        assert cmd.epilog and "Examples:" in cmd.epilog, name
        assert f"taskflow {name}" in cmd.epilog or name == "taskflow", name
    out = CliRunner().invoke(main, ["clean", "--help"]).output
    assert out.rstrip().splitlines()[-1].strip().startswith("taskflow clean"), out


def test_retired_short_options_say_the_long_form(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text("print('ran')\n")
    cli = CliRunner()
    r = cli.invoke(main, ["run", "-t", str(script)])
    assert r.exit_code == 2 and "-t is not --trace any more" in r.output
    assert "write --trace" in r.output and "ran" not in r.output
    for cmd in (["monitor", "-p", "8080"], ["serve", "-p", "8080"]):
        r = cli.invoke(main, cmd)
        assert r.exit_code == 2 and "write --port" in r.output, r.output


def test_run_nodes_is_local_nodes_with_a_note(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text("from taskflow import task, wait_on\n@task(returns=int)\n"
                      "def one():\n    return 1\nwait_on(one())\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--run-dir",
                        str(tmp_path / "runs"), "--no-progress", "-w", "2", "--nodes", "2",
                        str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "--nodes is now --local-nodes" in r.stderr
    assert "2 node(s), 2 slot(s)" in r.stderr       # the summary: two agents of one slot
    r = CliRunner().invoke(main, ["run", "--nodes", "2", "--local-nodes", "2", str(script)])
    assert r.exit_code == 2 and "give --local-nodes" in r.output


def test_resume_takes_an_optional_run_id_in_run_and_in_submit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wf.py").write_text("print('x')\n")
    cli = CliRunner()
    for args, want in ((["--resume"], "--resume latest "),
                       (["--resume", "20250101-120000-abcdef"], "--resume 20250101-120000-abcdef ")):
        r = cli.invoke(main, ["submit", "-N", "1", "-t", "5", *args, "--dry-run", "wf.py"])
        assert r.exit_code == 0, r.output
        assert want in r.output, r.output
    for cmd in ("run", "submit"):
        (opt,) = [p for p in main.commands[cmd].params if p.name == "resume"]
        assert opt.metavar == "[RUN_ID]", cmd
