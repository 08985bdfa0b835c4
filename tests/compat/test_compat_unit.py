"""The PyCOMPSs layer's pieces in-process: parameters, returns, bash-like words, XML files,
runcompss options, the import hook, and the layer used directly with a runtime."""
from __future__ import annotations

import sys

import pytest

from taskflow.agent.executor.invokers.words import fill, redirects
from taskflow.compat import importhook, xmlconfig
from taskflow.compat.pycompss.api import parameter as P
from taskflow.compat.calls.returns import count_returns, infer, parse
from taskflow.cli.runcompss import translate
from taskflow.errors import ClusterConfigError, UsageError
from taskflow.wire.template import ShellSyntax, UnsetVariable, template_words


def test_parameters_become_taskflow_params():
    p = P.to_native(P.COLLECTION_FILE_INOUT, "x")
    assert (p.kind, p.direction, p.elem_kind, p.depth) == ("collection", "INOUT", "file",
                                                           sys.maxsize)
    assert P.to_native({P.Type: P.COLLECTION_IN, P.Depth: 2}, "x").depth == 2
    p = P.to_native(P.Parameter(P.TYPE.FILE, P.DIRECTION.INOUT, P.IOSTREAM.STDOUT), "x")
    assert (p.kind, p.direction, p.stream) == ("file", "INOUT", "stdout")
    assert P.to_native(P.STDOUT, "x").stream == "stdout"
    assert P.to_native(P.FILE_COMMUTATIVE_STDERR, "x").direction == "INOUT"   # appends
    assert P.to_native({P.Type: P.FILE_IN, P.Prefix: "--in="}, "x").prefix == "--in="
    assert P.to_native(P.DICTIONARY_INOUT, "x").kind == "collection"
    for bad, words in ((P.FILE_IN_STDOUT, "FILE_OUT_STDOUT"), (P.FILE_OUT_STDIN, "FILE_IN_STDIN"),
                       (P.Parameter(P.TYPE.EXTERNAL_STREAM), "external streams"),
                       ("FILE_INN", "FILE_IN"),
                       ({P.Type: P.FILE_IN, "colour": 1}, "unknown key")):
        with pytest.raises(UsageError, match=words):
            P.to_native(bad, "task t, parameter 'p'")


def test_returns_read_from_the_source():
    def none(x):
        print(x)

    def two(x):
        def inner():
            return 1, 2, 3            # an inner function's return does not count
        if x:
            return x, x
        return None

    class C:
        def meth(self):
            return self, self, self

    assert count_returns(none) == 0 and count_returns(two) == 2
    assert count_returns(C.meth) == 3
    assert infer(lambda: 1, "f").fixed == 1

    def hinted() -> tuple[int, str, float]:
        return 1, "a", 2.0
    assert infer(hinted, "f").fixed == 3
    assert parse("4", none, "f").fixed == 4
    dyn = parse("value_of(cfg.n)", none, "f")
    assert dyn.count({"cfg": type("Cfg", (), {"n": 5})()}, none, "f") == 5
    with pytest.raises(UsageError, match="value_of"):
        parse("value_of cfg", none, "f")


def test_a_value_is_one_argument_and_the_template_is_read_as_bash_reads_it(tmp_path):
    """COMPSs escapes the spaces of every value before bash -c: only the template's own
    blanks separate arguments; its quotes, $VAR and unquoted globs are bash's."""
    for name in ("b.dat", "a.dat", "c.txt"):
        (tmp_path / name).write_text("")
    env = {"N": "4", "HOME": "/home/u", "TWO": "x y"}
    cwd = str(tmp_path)

    def line(template: str, **values: object) -> list[str]:
        return fill(template_words(template, env), values,
                    lambda n: [] if values.get(n) is None else
                    [str(v) for v in values[n]] if isinstance(values[n], list)
                    else [str(values[n])], cwd)

    assert line("-d {{when}}", when="next wednesday") == ["-d", "next wednesday"]
    assert line("{{a}} {{b}}", a="*.dat", b="x > y; rm -rf ~") == ["*.dat", "x > y; rm -rf ~"]
    assert line("-n $N '*.dat' *.dat") == ["-n", "4", "*.dat", "a.dat", "b.dat"]
    assert line('"a b" c\\ d ${N}x $TWO "$TWO"') == ["a b", "c d", "4x", "x", "y", "x y"]
    assert line("*.none") == ["*.none"]            # no match: kept, as bash does
    assert line("'$N' \"$N\" $1") == ["$N", "4", "$1"]
    assert line("-c '{{script}}'", script="exit 3") == ["-c", "exit 3"]
    assert line("--in={{files}} end", files=["a b", "c"]) == ["--in=a b", "c", "end"]
    assert line("{{files}}", files=["1", "2"]) == ["1", "2"]     # a collection: each element
    assert line("x{{none}}y {{none}}", none=None) == ["xy"]
    # a generator's escaped JSON (WfCommons's PyCOMPSs translator writes such templates):
    # an unquoted \" is a quote; inside single quotes the backslash stays, as in bash
    assert line('--out {\\"{{o}}\\":7} --in \'[\\"{{i}}\\"]\' ', o="/d/o 1", i="i") == [
        "--out", '{"/d/o 1":7}', "--in", '[\\"i\\"]']
    for bad in ("a | b", "a; b", "a & b", "$(date)", "`date`", "'open", "a >"):
        with pytest.raises(ShellSyntax):
            template_words(bad, env)
    # redirections are the program's streams, as bash opens them (relative: cwd's)
    words = template_words("-n {{x}} > {{out}} 2>&1 <in.txt", env)
    assert fill(words, {}, lambda n: [{"x": "1", "out": "o.txt"}[n]], cwd) == ["-n", "1"]
    assert redirects(words, lambda n: [{"x": "1", "out": "/t/o.txt"}[n]], cwd) == {
        "stdout": ("/t/o.txt", "OUT"), "stderr": ("/t/o.txt", "INOUT"),
        "stdin": (str(tmp_path / "in.txt"), "IN")}
    assert redirects(template_words("a 2>> err.log &> both", env), lambda n: [], cwd) == {
        "stderr": (str(tmp_path / "both"), "OUT"), "stdout": (str(tmp_path / "both"), "OUT")}
    with pytest.raises(UnsetVariable):
        template_words("$NOT_SET_ANYWHERE", env)


def test_xml_files_become_nodes(tmp_path):
    (tmp_path / "r.xml").write_text("""<ResourcesList>
  <ComputeNode Name="localhost"><Processor Name="P"><ComputingUnits>4</ComputingUnits></Processor>
    <Processor Name="G"><Type>GPU</Type><ComputingUnits>1</ComputingUnits></Processor>
    <Memory><Size>8</Size></Memory></ComputeNode>
  <ComputeNode Name="node2.example"><Processor Name="P"><ComputingUnits>16</ComputingUnits>
  </Processor></ComputeNode>
  <Http BaseUrl="http://h:1/a/"><ServiceName>s1</ServiceName><ServiceName>s2</ServiceName></Http>
</ResourcesList>""")
    (tmp_path / "p.xml").write_text("""<Project><MasterNode/>
  <ComputeNode Name="localhost"><LimitOfTasks>2</LimitOfTasks></ComputeNode>
  <ComputeNode Name="node2.example"><InstallDir>/opt/venv</InstallDir>
    <WorkingDir>/scratch/w</WorkingDir>
    <Adaptors><Adaptor Name="x"><User>alice</User></Adaptor></Adaptors></ComputeNode>
</Project>""")
    cfg = xmlconfig.load(str(tmp_path / "p.xml"), str(tmp_path / "r.xml"))
    local, remote = cfg.nodes
    assert (local.local, local.computing_units, local.gpus, local.memory) == (True, 2, 1, 8.0)
    assert (remote.host, remote.user, remote.computing_units, remote.working_dir) == \
        ("node2.example", "alice", 16, "/scratch/w")
    assert remote.setup == ['export PATH=/opt/venv/bin:"$PATH"']
    assert cfg.http == {"s1": ["http://h:1/a/"], "s2": ["http://h:1/a/"]}
    (tmp_path / "bad.xml").write_text("<ResourcesList><ComputeNode Name='x'><Processor>"
                                      "<ComputingUnits>many</ComputingUnits></Processor>"
                                      "</ComputeNode></ResourcesList>")
    with pytest.raises(ClusterConfigError, match="must be a number, got 'many'"):
        xmlconfig.load(None, str(tmp_path / "bad.xml"))


def test_runcompss_options_are_taken_off():
    args, opts = translate(["-gd", "--summary", "--project=p.xml", "--resources", "r.xml",
                            "--workers", "3", "--tracing=false", "--comm=NIO", "app.py",
                            "--summary"], {"--workers"})
    assert args == ["--workers", "3", "app.py", "--summary"]      # the app's own args stay
    assert opts["graph"] is True and opts["debug"] is True and opts["summary"] is True
    assert (opts["project"], opts["resources"], opts["tracing"]) == ("p.xml", "r.xml", "false")
    assert opts["ignored"] == ["--comm=NIO"]
    import click
    with pytest.raises(click.UsageError, match="persistent storage"):
        translate(["--storage_conf=s.cfg", "app.py"], set())


def test_import_hook_aliases_and_refuses_a_real_pycompss(tmp_path, monkeypatch):
    importhook.uninstall()
    try:
        importhook.install()
        import pycompss.api.parameter as aliased
        assert aliased is P and aliased.FILE_IN is P.FILE_IN
        with pytest.raises(ImportError, match="does not provide"):
            import pycompss.runtime.binding  # noqa: F401
    finally:
        importhook.uninstall()
    assert "pycompss" not in sys.modules
    real = tmp_path / "pycompss"
    real.mkdir()
    (real / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(importhook.RealPyCOMPSsInstalled, match="--compat-force"):
        importhook.install()
    try:
        importhook.install(force=True)
        import pycompss.api.task  # noqa: F401
        assert sys.modules["pycompss"].__name__ == "taskflow.compat.pycompss"
    finally:
        importhook.uninstall()


_IMPORTS_UNDER_THREADS = r"""
import importlib, pkgutil, sys, threading
import taskflow.compat.pycompss as layer
from taskflow.compat import importhook
importhook.install()
names = [m.name[len("taskflow.compat."):] for m in
         pkgutil.walk_packages(layer.__path__, "taskflow.compat.pycompss.")]
# Python asks a finder holding its global import lock: the finder must import nothing
finder = importhook.PyCOMPSsAlias()
spec = finder.find_spec("pycompss.api.IO")
assert spec is not None and "taskflow.compat.pycompss.api.IO" not in sys.modules, spec
for name in names:          # each module imported by two threads at once, by both names
    gate = threading.Barrier(2)
    def under(n):
        gate.wait()
        importlib.import_module(n)
    ts = [threading.Thread(target=under, args=(n,)) for n in (name, "taskflow.compat." + name)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sys.modules[name] is sys.modules["taskflow.compat." + name], name
print("IMPORTED", len(names))
"""


def test_the_import_hook_imports_nothing_while_python_holds_its_import_lock():
    """An executor unpickling a stream (importing the layer's module by its own name) while
    its preload thread imported ``pycompss`` hung: the finder imported under the global
    import lock, waiting for a module lock the other thread held while waiting for it."""
    import subprocess
    r = subprocess.run([sys.executable, "-c", _IMPORTS_UNDER_THREADS], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) > 30           # (every module of the layer: api, streams...)


def test_the_layer_imported_directly_with_a_runtime(rt):
    from taskflow.compat.pycompss.api.api import compss_wait_on
    from taskflow.compat.pycompss.api.task import task

    @task()
    def pair(x):
        return x, -x

    @task()
    def nothing(x):
        pass

    assert compss_wait_on(pair(2)) == [2, -2]
    assert nothing(1) is None
    # PyCOMPSs: a replicated task may write its objects (one version for all copies); a
    # written file would be written from every node at once: refused when called
    task(is_replicated=True, box=P.INOUT)(lambda box: None)


def test_declaration_errors_name_the_task(capsys):
    from taskflow.compat.pycompss.api.binary import binary
    from taskflow.compat.pycompss.api.container import container
    from taskflow.compat.pycompss.api.mpi import mpi
    from taskflow.compat.pycompss.api.task import task

    def f(x):
        pass
    with pytest.raises(UsageError, match=r"@binary on .*f: args=.*shell syntax"):
        binary(binary="echo", args="{{x}} | wc")(task()(f))
    with pytest.raises(UsageError, match=r"@container: missing mandatory argument\(s\) image"):
        binary(binary="echo", engine="DOCKER")          # the older spelling of @container
    with pytest.raises(UsageError, match="@container: engine='UDOCKER' is not one of"):
        container(engine="UDOCKER", image="x")
    # PyCOMPSs warns about an argument it does not know and goes on without it (the rank
    # count of a Python @mpi task, and returns=N against it, are decided at each call)
    mpi(runner="mpirun", processes=2, colour="blue")(task(returns=3)(f))
    assert "WARNING: Unexpected argument: colour Found in @mpi decorator." in \
        capsys.readouterr().err
    with pytest.raises(UsageError, match="must be placed above @task"):
        binary(binary="echo")(f)
    with pytest.raises(UsageError, match="runner is mandatory in the @mpi decorator"):
        mpi(binary="date", workingDir="/tmp")      # as PyCOMPSs: no runner is an error
