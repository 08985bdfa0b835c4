"""Every rank of an mpi4py task: ``python -m taskflow.agent.executor.invokers.mpi_python F``.

``F`` holds the pickled (function, args, kwargs, result path, every rank?, layouts); with
collection layouts each rank also reads ``F.r<rank>``, its blocks of those collections (a
rank given one element receives the element itself, as PyCOMPSs gives it).
Every rank calls the function; rank 0 writes ("ok", value) or ("error",
exception) to the result path; with "every rank" the value is the list of
all ranks' values, in rank order. A rank that raises aborts the whole job (the others would
otherwise wait for it in a collective forever).
"""
from __future__ import annotations

import pickle
import sys
import traceback

import cloudpickle


def main(path: str) -> int:
    from mpi4py import MPI
    from ....context import enter_worker
    enter_worker()                        # tasks called inside run inline
    comm = MPI.COMM_WORLD
    with open(path, "rb") as f:
        func, args, kw, result, *rest = cloudpickle.load(f)
    every_rank = bool(rest and rest[0])    # the value: every rank's, as a list (PyCOMPSs)
    _, layouts = (*rest, False, [])[:2]     # [(parameter, its position), ...] (mpi.py)
    if layouts:                            # this rank's blocks of the collections
        with open(f"{path}.r{comm.Get_rank()}", "rb") as f:
            mine = cloudpickle.load(f)
        for (name, pos), blocks in zip(layouts, mine):
            if len(blocks) == 1:            # one element: the element itself (PyCOMPSs)
                blocks = blocks[0]
            if pos is None:
                kw[name] = blocks
            else:
                args[pos] = blocks
    try:
        value = func(*args, **kw)
        if every_rank:
            value = comm.gather(value, root=0)
    except BaseException as exc:  # noqa: BLE001 - report anything, then abort the job
        traceback.print_exc()
        if comm.Get_rank() == 0:
            _write(result, ("error", exc))
        sys.stderr.flush()
        if comm.Get_size() > 1:
            comm.Abort(1)
        return 1
    if comm.Get_rank() == 0:
        _write(result, ("ok", value))
    return 0


def _write(path: str, outcome: tuple[str, object]) -> None:
    try:
        blob = cloudpickle.dumps(outcome)
        pickle.loads(blob)
    except Exception as exc:  # noqa: BLE001
        blob = cloudpickle.dumps(("error", RuntimeError(
            f"rank 0's value could not be pickled: {type(exc).__name__}: {exc}")))
    with open(path, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
