"""What a node runs besides a plain Python call, as typed records.

A task message (:class:`~taskflow.wire.messages.TaskMsg`) carries
``options: Options | None``. A plain Python call carries ``None`` (the hot
path: nothing to pickle, nothing to look at). Otherwise :class:`Options`
holds what the node enforces around the call (:class:`Limits`) and how the
call runs when it is not the function called in an executor
(:class:`Invocation`): an external program (:class:`Program`,
:class:`Mpi`), a REST call (:class:`Http`), a nested run
(:class:`Workflow`), or the Python function itself with an environment that
describes the nodes it holds (``action=None``), possibly in a container, with
hooks around it.

The master resolves a call's declaration into these records when the task is
called (``runtime.calltime``: ``$ENV`` expanded, expressions evaluated,
binaries checked) and fills :attr:`Invocation.placement` when a task that
holds several nodes or GPUs is dispatched (``runtime.scheduling.gang``). The node reads
them by attribute and dispatches on the action's type
(``agent.executor.invokers``). Records are immutable: calls whose options cannot
differ share one (pickled once per frame).
"""
from typing import NamedTuple, Union

# (No ``from __future__ import annotations`` here: NamedTuple turns every string annotation
# into a compiled ForwardRef, which cost 3 ms of every process's start-up for these records;
# evaluated annotations cost nothing.)


class Limits(NamedTuple):
    """What the node enforces around the call."""

    time_out: float | None = None     # seconds; past it the task ends with TIMEOUT
    memory: float | None = None       # GB: past it TaskMemoryExceeded (agent.executor.limits)


class Param(NamedTuple):
    """How a program sees one parameter that is not a plain object."""

    kind: str                         # graph.param kinds: "file", "directory", ...
    direction: str                    # IN, OUT, INOUT
    stream: str | None                # "stdin" | "stdout" | "stderr": wired, never on argv
    prefix: str | None                # put before the value on the command line


class CommandLine(NamedTuple):
    """How the call's values become a program's arguments (agent.executor.invokers.command)."""

    args: str | None                  # the template ('-i {{infile}} -n {{n}}'); None: the
    #                                   values in the order of the parameters
    params: dict[str, Param]          # parameters that are files, streams or prefixed
    order: tuple[str, ...] = ()       # the parameter names, in the signature's order
    varargs: str | None = None        # the names of *args and **kwargs, if any
    varkw: str | None = None
    # PyCOMPSs: the template's words as bash reads them, $VAR expanded on the master;
    # each value is one argument where its {{name}} stands (agent.executor.invokers.words)
    words: tuple[str, ...] | None = None
    # parameters the program sees as environment variables of their names, never on argv
    # (taskflow map's TASKFLOW_INDEX, TASKFLOW_ITEM)
    env: tuple[str, ...] = ()


class Program(NamedTuple):
    """``@binary`` / ``@ompss``: one program; its exit code is the task's value."""

    binary: str
    line: CommandLine
    working_dir: str | None
    fail_by_exit_value: bool
    openmp: bool = False              # @ompss: OMP_NUM_THREADS and NX_ARGS from the threads
    keep_background: bool = False     # its background processes outlive it (to the run's end)


class MpmdProgram(NamedTuple):
    """One program of an ``@mpmd_mpi`` launch."""

    binary: str
    args: str | None
    processes: int
    words: tuple[str, ...] | None = None      # as CommandLine.words, for this program


class Mpi(NamedTuple):
    """``@mpi``: ``runner`` over the nodes the task holds."""

    runner: str                       # mpirun | mpiexec | srun
    processes: int
    flags: str | None
    binary: str | None                # None: the Python function on every rank (mpi4py)
    line: CommandLine
    working_dir: str | None
    fail_by_exit_value: bool
    programs: tuple[MpmdProgram, ...] = ()   # @mpmd_mpi: several programs in one launch
    rank_values: bool = False         # mpi4py mode: the value is every rank's (PyCOMPSs)
    # mpi4py mode, PyCOMPSs's collection layouts: (parameter, block_count, block_length,
    # stride); each rank receives only its blocks of that collection (agent.executor.invokers.mpi)
    layouts: tuple[tuple[str, int, int, int], ...] = ()


class Http(NamedTuple):
    """PyCOMPSs's ``@http``: one REST call (agent.executor.invokers.http)."""

    url: str                          # the service's base URL, chosen on the master
    request: str                      # GET, POST, ...
    resource: str                     # appended to the URL; {{name}}: a parameter
    payload: str | None
    payload_type: str | None
    produces: str | None
    updates: str | None
    file_params: tuple[str, ...]      # parameters whose file content is a payload
    timeout: float | None
    order: tuple[str, ...] = ()       # the parameter names, in the signature's order


class Workflow(NamedTuple):
    """``@workflow`` (PyCOMPSs's ``@compss``): a nested ``taskflow run`` of a script."""

    script: str
    line: CommandLine                 # the script's arguments
    working_dir: str | None
    flags: str | None                 # more ``taskflow run`` options
    fail_by_exit_value: bool
    compat: bool                      # run it with --compat pycompss
    run_dir: str                      # where the nested run keeps its journal
    parent_run: str


Action = Union[Program, Mpi, Http, Workflow]


class FileMount(NamedTuple):
    """A file or directory parameter a container sees at the same path."""

    kind: str                         # "file" | "directory"
    direction: str
    stream: str | None


class Container(NamedTuple):
    """``@container``: the program, each MPI rank or the function in a fresh container."""

    engine: str                       # podman | docker | apptainer
    image: str
    options: tuple[str, ...]          # more options of the engine's run command
    files: dict[str, FileMount]       # parameters to bind-mount
    cpus: int | None = None           # the computing units the task holds (None: no limit)
    memory_gb: float = 0.0            # its memory_size (0: no limit)
    gpus: tuple[str, ...] = ()        # host GPU ids handed over (set on the node)


class HookProgram(NamedTuple):
    """A prolog or epilog: a program run before / after the task, in its working directory."""

    binary: str
    args: str | None                  # {{name}}: the task's parameters
    working_dir: str | None
    fail_by_exit_value: bool | None   # None: a prolog's failure fails the task, an epilog's not
    bash: bool = False                # PyCOMPSs: args read as bash reads them (CommandLine.words)
    words: tuple[str, ...] | None = None      # those words, once resolved on the master


class Hooks(NamedTuple):
    """Steps around the call on the node (agent.executor.invokers.hooks)."""

    prolog: HookProgram | None = None
    epilog: HookProgram | None = None
    fresh_dirs: tuple[str, ...] = ()  # DIRECTORY_OUT parameters the task makes itself
    renamed: tuple[str, ...] = ()     # file parameters seen under COMPSs's version names


class Gang(NamedTuple):
    """What a task holds on several nodes or with GPUs: ``procs`` processes of ``unit``
    computing units, ``ppn`` per node when given, ``gpus`` GPUs; without ``ppn``, processes
    in whole ``group``s of that many per node (PyCOMPSs's computing nodes: several groups
    share a node with room) (runtime.scheduling.gang)."""

    procs: int
    ppn: int | None
    unit: int
    gpus: int = 0
    group: int = 1


class Placement(NamedTuple):
    """The nodes the scheduler gave a gang task, when it was dispatched (runtime.scheduling.gang)."""

    hosts: tuple[tuple[str, int], ...]        # host name, processes: one entry per host
    node_names: tuple[tuple[str, int], ...]   # node name, processes: one per chosen node
    node_hosts: tuple[str, ...]               # the host of each chosen node
    slurm_nodes: tuple[tuple[str, int], ...] | None   # Slurm's names, in a Slurm job
    gpus: tuple[int | str, ...] = ()          # GPU ids on the first node (CUDA_VISIBLE_DEVICES)
    # named resources given (runtime.scheduling.resources): TASKFLOW_RESOURCES, JSON of
    # {name: {"amount": a, "indices": [...]}}; the variant taken (TASKFLOW_VARIANT), -1: none
    resources: str = ""
    variant: int = -1


class Invocation(NamedTuple):
    """How a call runs on its node when it is not a plain Python call."""

    action: Action | None             # None: the task's Python function itself
    threads: int = 1                  # computing units held on the node
    log_dir: str | None = None        # where programs' job files go
    container: Container | None = None
    hooks: Hooks | None = None
    gang: Gang | None = None          # several nodes or GPUs: what the scheduler reserves
    placement: Placement | None = None   # set when it is dispatched


class Options(NamedTuple):
    """``TaskMsg.options``: ``None`` for a plain Python call."""

    limits: Limits | None = None
    invocation: Invocation | None = None

    @property
    def time_out(self) -> float | None:
        lim = self.limits
        return lim.time_out if lim is not None else None

    @property
    def memory_limit(self) -> float | None:
        lim = self.limits
        return lim.memory if lim is not None else None


def limit_memory(options: Options | None, memory: float) -> Options:
    """``options`` with a memory limit of ``memory`` GB (its time-out and invocation kept)."""
    if options is None:
        return Options(Limits(None, memory))
    lim = options.limits
    return Options(Limits(lim.time_out if lim is not None else None, memory), options.invocation)
