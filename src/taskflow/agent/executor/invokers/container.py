"""The @container invoker (node side): a task's program or function in a fresh container.

The engine's command is an argv list, never a shell string::

    podman run --rm --init --name taskflow-<pid>-<task> --user UID:GID
        --ulimit nofile=S:H --ulimit nproc=S:H --cpus N [--memory Mm] [GPU devices]
        -v PATH:PATH[:ro] ... -w CWD -e KEY=VALUE ... [-i] [user options] IMAGE program args

- ``--user`` the agent's uid:gid, so files a task writes belong to whoever runs
  taskflow (a rootless podman gets ``--userns=keep-id`` for the same effect);
- ``--init`` so the SIGTERM of a time-out or a cancel reaches the program (PID 1
  ignores it otherwise);
- explicit ulimits: the agent's own, nproc capped at the kernel's pid_max (an
  engine's defaults may exceed what a root without CAP_SYS_RESOURCE may set;
  runc refuses nproc above pid_max here);
- FILE / DIRECTORY / stream parameters and the working directory bind-mounted at
  the same paths, inputs read-only;
- ``docker`` runs without ``--rm`` and removes the container after it ended
  (through a docker-compatible socket, ``docker run --rm`` may report exit 0
  whatever the program returned); ``apptainer`` (``singularity``) uses ``exec``
  with ``--bind`` and ``--cleanenv`` and sets no limits (that needs cgroups
  delegation).

Before a task first uses an image on this node, :func:`check` asks the engine
whether it is there (and, for a Python task, which Python the image has and
whether it holds taskflow); the answer is kept for the agent's lifetime in a
file shared by its executors, so each node checks an image once.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, NamedTuple

from ....errors import ContainerUnavailable
from ....wire.invocation import Container, FileMount, Invocation, Program
from . import command

if TYPE_CHECKING:
    from ....wire.messages import LineWire

LIB = "/opt/taskflow/lib"          # taskflow's own code, when the image lacks it
PROBE_TIMEOUT = 120                # s; the first use of an image may unpack it
_PY_PROBE = ("import json, sys\nout = {'py': list(sys.version_info[:2])}\ntry:\n"
             "    import taskflow._version as v, cloudpickle\n    out['taskflow'] = v.__version__\n"
             "except Exception:\n    out['taskflow'] = None\nprint(json.dumps(out))\n")


class Probe(NamedTuple):
    """What :func:`check` found out about one engine and image on this node."""
    exe: str                       # the engine's executable
    mount_lib: bool                # mount taskflow (and cloudpickle) into the container


def node() -> str:
    return os.uname().nodename


def unavailable(engine: str, image: str, why: str, fix: str) -> ContainerUnavailable:
    return ContainerUnavailable(f"@container: {engine} cannot run image {image} on node "
                                f"{node()}: {why}. {fix}")


# -- the check, once per node and image ---------------------------------------------------
_CHECKED: dict[tuple[str, str, bool], Probe | ContainerUnavailable] = {}


def check(engine: str, image: str, python: bool) -> Probe:
    """The engine and image are usable here (raise :class:`ContainerUnavailable` if not)."""
    key = (engine, image, python)
    got = _CHECKED.get(key)
    if got is None:
        got = _CHECKED[key] = _shared_check(engine, image, python)
    if isinstance(got, ContainerUnavailable):
        raise got
    return got


def _cache_dir() -> str:
    d = os.path.join(tempfile.gettempdir(), f"taskflow-{os.getuid()}", "container-checks")
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def _agent_id() -> str:
    """The agent this executor belongs to (its parent), unique across pid reuse."""
    ppid = os.getppid()
    try:
        with open(f"/proc/{ppid}/stat") as f:
            start = f.read().rpartition(")")[2].split()[19]    # field 22: start time
    except (OSError, IndexError):
        start = "0"
    return f"{ppid}-{start}"


def _shared_check(engine: str, image: str, python: bool) -> Probe | ContainerUnavailable:
    """One check per agent: the executors share the answer through a locked file."""
    digest = hashlib.sha256(f"{engine}\0{image}\0{python}\0{os.environ.get('DOCKER_HOST', '')}"
                            .encode()).hexdigest()[:24]
    path = os.path.join(_cache_dir(), f"{_agent_id()}-{digest}.json")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                saved = json.load(f)
        except (OSError, ValueError):
            saved = None
        if saved is None:
            _prune(os.path.dirname(path))
            try:
                probe = _probe(engine, image, python)
                saved = {"exe": probe.exe, "mount_lib": probe.mount_lib}
            except ContainerUnavailable as exc:
                saved = {"error": str(exc)}
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(saved, f)
            os.replace(tmp, path)
    if "error" in saved:
        return ContainerUnavailable(saved["error"])
    return Probe(saved["exe"], saved["mount_lib"])


def _prune(d: str) -> None:
    """Forget the checks of agents that have ended (their files would pile up)."""
    for name in os.listdir(d):
        agent = name.partition("-")[0]
        if not agent.isdigit() or os.path.exists(f"/proc/{agent}"):
            continue
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass


def _probe(engine: str, image: str, python: bool) -> Probe:
    exe = shutil.which(engine)
    if exe is None:
        fix = {"podman": "install it (apt-get install podman runc catatonit)",
               "docker": "install the docker CLI and point DOCKER_HOST at a docker-compatible "
                         "socket", "apptainer": "install apptainer (or singularity)"}[engine]
        if engine == "apptainer" and shutil.which("singularity"):
            exe = shutil.which("singularity")
        else:
            raise unavailable(engine, image, f"'{engine}' is not on PATH "
                              f"({os.environ.get('PATH', '')})", f"On {node()}, {fix}.")
    assert exe is not None
    if engine == "apptainer":
        if "://" not in image and not os.path.exists(image):
            raise unavailable(engine, image, "the image file does not exist",
                              "Copy the .sif there or give a docker:// or library:// URI.")
    else:
        inspect = [exe, "image", "exists", image] if engine == "podman" else \
            [exe, "image", "inspect", "--format", "{{.Id}}", image]
        r = _quiet(inspect, engine, image)
        if r.returncode != 0:
            text = (r.stderr or r.stdout).strip()
            if engine == "podman" and r.returncode == 1 and not text or \
                    "no such image" in text.lower() or "image not known" in text.lower():
                raise unavailable(engine, image, "the image is not there",
                                  f"Pull or build it on that node first ({engine} pull {image}, "
                                  f"{engine} load -i FILE or {engine} build -t {image} DIR).")
            raise unavailable(engine, image, f"'{' '.join(inspect)}' failed with exit code "
                              f"{r.returncode}: {text[-500:]}", "Check the engine works there "
                              f"({engine} info).")
    if not python:
        return Probe(exe, False)
    name = f"taskflow-probe-{os.getpid()}-{os.urandom(3).hex()}"
    argv = base_argv(engine, exe, Container(engine, image, (), {}), name, [], "/", {}, False) + \
        [image, "python3", "-c", _PY_PROBE]
    try:
        r = _quiet(argv, engine, image)
    finally:
        remove(engine, Probe(exe, False), name)
    mine = list(sys.version_info[:2])
    mine_s = "%d.%d" % tuple(mine)
    try:
        found = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = None
    if r.returncode != 0 or not isinstance(found, dict):
        raise unavailable(engine, image, f"running python3 in it failed with exit code "
                          f"{r.returncode}: {(r.stderr or r.stdout).strip()[-500:]}",
                          f"A Python @task in a container needs python3 "
                          f"{mine_s} on the image's PATH.")
    if found.get("py") != mine:
        have = ".".join(map(str, found.get("py") or ["?"]))
        raise unavailable(engine, image, f"its python3 is {have}, the node's taskflow runs "
                          f"{mine_s}", f"Functions travel as Python {mine_s} "
                          f"bytecode: use an image with that Python (or run the "
                          f"agent with the image's).")
    from ...._version import __version__
    return Probe(exe, found.get("taskflow") != __version__)


def _quiet(argv: list[str], engine: str, image: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise unavailable(engine, image, f"'{' '.join(argv[:4])} ...' did not answer within "
                          f"{PROBE_TIMEOUT} s", f"Check the engine there ({engine} info).") \
            from None
    except OSError as exc:
        raise unavailable(engine, image, f"could not start {argv[0]}: {exc}",
                          "Check the engine's installation.") from None


# -- the command ------------------------------------------------------------------------
def _limits() -> list[str]:
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
    except (OSError, ValueError):
        pid_max = 32768
    out = []
    for name, which, cap in (("nofile", resource.RLIMIT_NOFILE, None),
                             ("nproc", resource.RLIMIT_NPROC, pid_max)):
        soft, hard = resource.getrlimit(which)
        if hard == resource.RLIM_INFINITY:
            hard = cap or 1048576
        if soft == resource.RLIM_INFINITY or soft > hard:
            soft = hard
        if cap:
            soft, hard = min(soft, cap), min(hard, cap)
        out += ["--ulimit", f"{name}={soft}:{hard}"]
    return out


def base_argv(engine: str, exe: str, c: Container, name: str, mounts: list[tuple[str, bool]],
              cwd: str, env: dict[str, str], interactive: bool) -> list[str]:
    """The engine's command up to (not including) the image."""
    user_opts: list[str] = list(c.options)
    vol = "--bind" if engine == "apptainer" else "-v"
    binds: list[str] = []
    for path, ro in mounts:
        if ":" in path or "," in path:
            raise ValueError(f"{path} cannot be bind-mounted into a container (a ':' or ',' "
                             f"in a path breaks the engine's mount syntax); rename it")
        binds += [vol, f"{path}:{path}" + (":ro" if ro else "")]
    envs: list[str] = []
    for k, v in env.items():
        envs += ["--env" if engine == "apptainer" else "-e", f"{k}={v}"]
    if engine == "apptainer":
        return [exe, "exec", "--cleanenv", "--pwd", cwd, *binds, *envs,
                *(["--nv"] if c.gpus else []), *user_opts]
    argv = [exe, "run", "--init", "--name", name, "--label", "taskflow=1"]
    if engine == "podman":
        argv.append("--rm")
    if engine == "podman" and os.geteuid() != 0:
        argv.append("--userns=keep-id")
    argv += ["--user", f"{os.getuid()}:{os.getgid()}"]
    if not any(o.startswith("--ulimit") for o in user_opts):
        argv += _limits()
    if c.cpus:
        argv += ["--cpus", str(c.cpus)]
    if c.memory_gb:
        argv += ["--memory", f"{max(6, int(float(c.memory_gb) * 1024))}m"]
    gpus = c.gpus
    if gpus:
        if engine == "podman":
            for g in gpus:
                argv += ["--device", f"nvidia.com/gpu={g}"]
        else:
            argv += ["--gpus", '"device=' + ",".join(gpus) + '"']
    if interactive:
        argv.append("-i")
    return argv + binds + ["-w", cwd] + envs + user_opts


def mounts(files: dict[str, FileMount], values: dict[str, Any], cwd: str,
           extra: list[tuple[str, bool]] | None = None) -> list[tuple[str, bool]]:
    """(path, read-only) to bind: file and directory parameters, the working directory."""
    want: dict[str, bool] = {}

    def add(path: str, ro: bool) -> None:
        path = os.path.abspath(path)
        want[path] = want.get(path, True) and ro

    def leaves(v: Any) -> list[str]:
        if isinstance(v, (list, tuple)):
            return [p for x in v for p in leaves(x)]
        return [os.fspath(v)] if isinstance(v, (str, os.PathLike)) else []

    for pname, (kind, direction, _stream) in files.items():
        for p in leaves(values.get(pname)):
            if direction == "IN" and os.path.exists(p):
                add(p, True)
            elif kind == "directory" and os.path.isdir(p):
                add(p, False)
            else:                      # a file to (re)write, or a directory not made yet
                parent = os.path.dirname(os.path.abspath(p))
                os.makedirs(parent, exist_ok=True)
                add(parent, False)
    add(cwd, False)
    for p, ro in extra or ():
        add(p, ro)
    return sorted(want.items())


def gpu_env(inv: Invocation, engine: str) -> tuple[list[str], dict[str, str]]:
    """(host GPU ids to hand over, environment the task sees inside)."""
    place = inv.placement
    ids = [str(g) for g in place.gpus] if place is not None else []
    if not ids:
        return [], {}
    inside = ids if engine == "apptainer" else [str(i) for i in range(len(ids))]
    return ids, {"CUDA_VISIBLE_DEVICES": ",".join(inside), "TASKFLOW_GPUS": ",".join(ids)}


def container_name(tid: int) -> str:
    return f"taskflow-{os.getpid()}-{tid}-{os.urandom(3).hex()}"


def wrap(c: Container, probe: Probe, inner: list[str], mount_list: list[tuple[str, bool]],
         cwd: str, env: dict[str, str], interactive: bool, tid: int) -> tuple[list[str], str]:
    """(the engine's whole command running ``inner`` in the image, the container's name).

    podman's and docker's containers are not the descendants of the command (a
    daemon, or conmon, runs them): its peak memory is the client's, and the task's
    measure says so (:mod:`..usage`); apptainer's are."""
    from . import process
    if c.engine != "apptainer":
        process.client_only = True
    name = container_name(tid)
    argv = base_argv(c.engine, probe.exe, c, name, mount_list, cwd, env, interactive)
    return argv + [c.image] + inner, name


def remove(engine: str, probe: Probe, name: str) -> None:
    """docker runs without --rm (see the module docstring): remove the container now."""
    if engine == "docker":
        subprocess.run([probe.exe, "rm", "-f", name], capture_output=True, timeout=60,
                       stdin=subprocess.DEVNULL)


def program_env(env: dict[str, str], inv: Invocation, engine: str) -> dict[str, str]:
    """What a program in a container sees: taskflow's variables, never the node's whole env."""
    out = {k: v for k, v in env.items() if k.startswith(("TASKFLOW_", "COMPSS_", "OMP_", "NX_"))}
    out.update(gpu_env(inv, engine)[1])
    return out


def prepare(inv: Invocation, values: dict[str, Any], cwd: str,
            python: bool) -> tuple[Container, Probe, list[tuple[str, bool]]]:
    """The task's container with the GPUs it holds, the engine's check, the mounts."""
    c = inv.container
    assert c is not None            # (only invocations with a container come here)
    c = c._replace(gpus=tuple(gpu_env(inv, c.engine)[0]))
    probe = check(c.engine, c.image, python)
    return c, probe, mounts(c.files, values, cwd)


def run_program(action: Program, inv: Invocation, values: dict[str, Any], tail: list[str],
                streams: dict[str, tuple[str, str]], cwd: str, env: dict[str, str],
                logs: list[LineWire], log_base: str | None, tid: int) -> int:
    """@binary / @ompss in a container: the exit code, as for a plain program."""
    from . import process
    c, probe, mount_list = prepare(inv, values, cwd, False)
    argv, name = wrap(c, probe, [action.binary] + tail, mount_list, cwd,
                      program_env(env, inv, c.engine), "stdin" in streams, tid)
    try:
        return process.run(argv, cwd, env, streams, logs, log_base, action.fail_by_exit_value)
    finally:
        remove(c.engine, probe, name)


def rank_command(inv: Invocation, binary: str, values: dict[str, Any], tail: list[str],
                 cwd: str, env: dict[str, str], tid: int) -> list[str]:
    """@mpi: what each rank runs, ``engine run ... image binary args`` (the runner stays on
    the node). Ranks share the host's network and IPC and see the runner's OMPI_* / PMIX_*
    variables; one container per rank, so none is named."""
    c, probe, mount_list = prepare(inv, values, cwd, False)
    if c.engine == "docker":
        raise unavailable("docker", c.image, "@mpi ranks cannot run in docker containers "
                          "here (each needs --rm, whose exit code a compatible socket may lose)",
                          "Use engine='podman' or 'apptainer' for @mpi.")
    c = c._replace(cpus=None)      # the runner's ranks share the task's slots
    argv, name = wrap(c, probe, [binary] + tail, mount_list, cwd,
                      program_env(env, inv, c.engine), False, tid)
    if c.engine == "podman":
        i = argv.index(name)
        argv[i - 1:i + 1] = ["--network=host", "--ipc=host", "--env", "OMPI_*", "--env", "PMIX_*",
                             "--env", "PMI_*"]
    return argv


def run_python(func: Any, args: list[Any], kw: dict[str, Any], inv: Invocation,
               logs: list[LineWire], tid: int) -> Any:
    """A Python @task in a container: the function runs under
    :mod:`taskflow.agent.executor.invokers.container_python` there; its value comes back."""
    import pickle
    import shlex

    import cloudpickle

    from ....errors import ProgramFailed
    from . import process
    cwd = os.getcwd()
    values = command.bind(func, args, kw, ())
    c, probe, mount_list = prepare(inv, values, cwd, True)
    log_dir = inv.log_dir or tempfile.mkdtemp(prefix="taskflow-ctr-")
    xdir = os.path.join(log_dir, f"job{tid}.ctr")
    os.makedirs(xdir, mode=0o700, exist_ok=True)
    call, result = os.path.join(xdir, "call.pkl"), os.path.join(xdir, "result.pkl")
    extra: list[tuple[str, bool]] = [(xdir, False)]
    pypath: list[str] = []
    if probe.mount_lib:
        here = os.path.abspath(__file__)        # taskflow/agent/executor/invokers/container.py
        for _ in range(4):
            here = os.path.dirname(here)        # -> taskflow/
        extra_lib = [(here, "taskflow"), (os.path.dirname(os.path.abspath(cloudpickle.__file__)),
                                          "cloudpickle")]
        pypath.append(LIB)
    code_dir = _code_dir(func)
    if code_dir:
        extra.append((code_dir, True))
        pypath.append(code_dir)
    mount_list = mounts({}, {}, cwd, mount_list + extra)
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": ":".join(pypath)}
    env.update(program_env(dict(os.environ), inv, c.engine))
    try:
        with open(call, "wb") as f:
            cloudpickle.dump((func, list(args), dict(kw), result), f)
        entry = "taskflow.agent.executor.invokers.container_python"
        argv, name = wrap(c, probe, ["python3", "-m", entry, call], mount_list, cwd, env, False,
                          tid)
        if probe.mount_lib:        # library mounts go to LIB, not to the same path
            i = argv.index("-w")
            libs: list[str] = []
            for src, mod in extra_lib:
                libs += ["--bind" if c.engine == "apptainer" else "-v",
                         f"{src}:{LIB}/{mod}:ro"]
            argv[i:i] = libs
        log_base = os.path.join(log_dir, f"job{tid}")
        try:
            code = process.run(argv, cwd, dict(os.environ), {}, logs, log_base, False)
        finally:
            remove(c.engine, probe, name)
        outcome = None
        if os.path.exists(result):
            with open(result, "rb") as f:
                outcome = pickle.load(f)
    finally:
        shutil.rmtree(xdir, ignore_errors=True)
    if outcome is not None:
        status, value = outcome
        if status == "error" and isinstance(value, BaseException):
            raise value
        if status == "ok":
            return value
    lines = [line for _, lvl, line in logs if lvl != "STDOUT"][-process.TAIL:]
    why = f"exit code {code}" + (" (137: killed, out of memory under --memory?)"
                                 if code == 137 else "")
    raise ProgramFailed(f"the container of task {tid} ({shlex.join(argv)}) ended with {why} "
                        f"before the function returned\nlast stderr lines:\n  " +
                        "\n  ".join(lines) + f"\nlogs: {log_base}.out, {log_base}.err", code,
                        argv)


def _code_dir(func: Any) -> str | None:
    """The directory of the function's source, when outside the installed packages: a
    function pickled by value still imports its own module's neighbours."""
    fn = getattr(getattr(func, "__code__", None), "co_filename", "")
    if not fn or not os.path.isfile(fn):
        return None
    d = os.path.dirname(os.path.abspath(fn))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        if d.startswith(os.path.abspath(p) + os.sep):
            return None
    return d
