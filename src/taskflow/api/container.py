"""``@container``: the task runs in a fresh container of an image on its node.

Order (PyCOMPSs): ``@constraint`` -> ``@container`` -> ``@binary`` / ``@ompss`` /
``@mpi`` -> ``@task``, or ``@container`` straight above ``@task`` for a Python
function::

    @container(engine="podman", image="localhost/mini-py:1", options="--network=none")
    @binary(binary="/opt/tool/bin/count", args="{{f}}")
    @task(f=FILE_IN)
    def count(f): ...

``engine`` is ``PODMAN``, ``DOCKER`` (the docker CLI, against any
docker-compatible socket) or ``SINGULARITY`` / ``APPTAINER``, case-insensitive;
``image`` the image to run (``$VAR`` expands when the task is called);
``options`` more options for the engine's ``run`` command, split like a shell
would (never run by one). What the node does (taskflow.agent.executor.invokers.container):

- the program (``binary``, looked up in the image, not on the node) or, for
  ``@task``, the Python function through a taskflow entry point inside the
  container, taskflow's own code mounted read-only when the image lacks it;
- FILE / DIRECTORY / stream parameters and the working directory are
  bind-mounted at the same paths (inputs read-only), the container runs as
  the user who runs taskflow (``--user``), with ``--init`` so a time-out or a
  cancel stops it, and the agent's own ulimits;
- ``@constraint`` turns into ``--cpus`` (computing units), ``--memory``
  (memory_size) and GPU devices (with ``CUDA_VISIBLE_DEVICES`` numbering
  them inside);
- the exit code is the result, as for a plain program; stdout and stderr go
  to the task's logs;
- an engine or image missing on the node fails the task before it runs, with
  the node, the engine and the image named (checked once per node and image).

``@mpi`` runs its runner on the node and every rank in a container
(``mpirun -n P podman run ... image binary``); it needs ``binary``.
``@multinode`` tasks cannot run in a container.
"""
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Callable

from ..errors import UsageError
from ..graph.decl import MpiDecl
from ..graph.param import COLLECTION_KIND, DIRECTORY_KIND, FILE_KIND
from ..wire.invocation import Container, FileMount
from .external import check_arguments
from .task import TaskFunction

if TYPE_CHECKING:
    from ..graph.spec import TaskSpec

MANDATORY = ("engine", "image")
SUPPORTED = ("options",)
DEPRECATED = ()
ENGINES = ("podman", "docker", "singularity", "apptainer")


def container(engine: str | None = None, image: str | None = None, options: str | None = None,
              **others: object) -> Callable[..., Any]:
    """Run the task below in a container of ``image`` (see the module docstring).

    Example::

        from taskflow import binary, container, task, wait_on

        @container(engine="podman", image="docker.io/library/alpine:3",
                   options="--network=none")
        @binary(binary="cat", args="/etc/alpine-release")
        @task(returns=int)
        def release() -> int: ...

        print(wait_on(release()))                         # 0; the version is in its log
    """
    check_arguments("container", dict(others, engine=engine, image=image), MANDATORY, SUPPORTED)
    if not isinstance(engine, str) or engine.lower() not in ENGINES:
        raise UsageError(f"@container: engine={engine!r} is not one of "
                         f"{', '.join(e.upper() for e in ENGINES)} (case-insensitive).")
    if not isinstance(image, str) or not image.strip():
        raise UsageError(f"@container: image must be a non-empty string like "
                         f"'localhost/mini-py:1', not {image!r}.")
    if options is not None and not isinstance(options, str):
        raise UsageError(f"@container: options must be a string of engine options like "
                         f"'--memory 2g --network=none', not {options!r}.")
    try:
        opts = shlex.split(options or "")
    except ValueError as exc:
        raise UsageError(f"@container: options {options!r} cannot be split into arguments "
                         f"({exc}); check the quotes.") from None
    name = engine.lower()
    engine_name = "apptainer" if name == "singularity" else name
    image_name = image.strip()

    def decorate(target: Any) -> TaskFunction:
        if not isinstance(target, TaskFunction):
            raise UsageError(f"@container must be placed above @task, @binary, @ompss or @mpi "
                             f"(order: @constraint -> @container -> @binary -> @task), not on "
                             f"{getattr(target, '__qualname__', target)!r}.")
        spec = target.spec
        if spec.container is not None:
            raise UsageError(f"@container on {spec.name}: the task already has a container; "
                             f"use one @container per task.")
        if spec.invoker == "multinode":
            raise UsageError(f"@container on {spec.name}: a @multinode task cannot run in a "
                             f"container; put the program it starts in one (@binary).")
        if isinstance(spec.program, MpiDecl) and not spec.program.binary:
            raise UsageError(f"@container on {spec.name}: @mpi without binary= runs the Python "
                             f"function under mpi4py on the node; give @mpi a binary to run "
                             f"each rank in a container.")
        spec.declare_container(Container(engine_name, image_name, tuple(opts),
                                         _file_params(spec)))
        return target

    return decorate


def _file_params(spec: TaskSpec) -> dict[str, FileMount]:
    """Parameter name -> (file | directory, direction, stream) for what the node mounts."""
    out: dict[str, FileMount] = {}
    for pname, p in spec.params.items():
        kind = p.elem_kind if p.kind == COLLECTION_KIND else p.kind
        if kind in (FILE_KIND, DIRECTORY_KIND):
            out[pname] = FileMount(kind, p.direction, p.stream)
    return out
