"""``pycompss.api.container``: ``@container(engine=..., image=..., options=...)``.

Above ``@binary`` / ``@mpi`` (the program runs in the image) or straight above
``@task`` (the Python function runs in the image), as in PyCOMPSs. It is
taskflow's own container support (:mod:`taskflow.api.container`): ``engine``
``DOCKER``, ``PODMAN``, ``SINGULARITY`` or ``APPTAINER`` (case-insensitive),
files at the same paths, the caller's user, ``@constraint`` as engine limits; a
function of the application's module loads there as on a node (the ``pycompss``
alias first: compat.importhook.load_task_function). PyCOMPSs's deprecated ``binary`` / ``working_dir`` /
``fail_by_exit_value`` arguments are those of a ``@binary`` below it. An
engine taskflow does not run (``UDOCKER``) is an error naming the ones it does.
"""
from __future__ import annotations

from typing import Any

from ....api.container import container as native_container
from ....errors import UsageError
from ...external import normalize
from .binary import binary

SUPPORTED = ("engine", "image", "options")
PROGRAM = ("binary", "working_dir", "fail_by_exit_value")   # PyCOMPSs: deprecated here


class container:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args:
            raise UsageError(f"@container takes keyword arguments only (engine=, image=, "
                             f"options=), got {args!r}.")
        kw = normalize("container", kwargs, SUPPORTED + PROGRAM)
        self.program = {k: kw.pop(k) for k in PROGRAM if k in kw}
        if self.program and "binary" not in self.program:
            raise UsageError(f"@container: {', '.join(sorted(self.program))}= belong to the "
                             f"program it runs: give binary= too, or put them on a @binary "
                             f"below @container.")
        self.decorate = native_container(kw.get("engine"), kw.get("image"), kw.get("options"))

    def __call__(self, target: Any) -> Any:
        if self.program:
            target = binary(**self.program)(target)
        return self.decorate(target)


Container = container
