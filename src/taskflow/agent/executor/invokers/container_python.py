"""Inside a container: ``python3 -m taskflow.agent.executor.invokers.container_python CALL``.

``CALL`` holds the pickled (function, args, kwargs, result path), written by
the node's container invoker into a directory bind-mounted at the same path.
The function runs as in an executor (tasks it calls run inline); ("ok", value)
or ("error", exception) goes to the result path. Its output goes to the
container's stdout / stderr, which the node keeps as the task's log lines.
"""
from __future__ import annotations

import pickle
import sys
import traceback

import cloudpickle


def main(path: str) -> int:
    from ....context import enter_worker
    enter_worker()
    with open(path, "rb") as f:
        func, args, kw, result = cloudpickle.load(f)
    what = "value"
    try:
        outcome: tuple[str, object] = ("ok", func(*args, **kw))
        code = 0
    except BaseException as exc:  # noqa: BLE001 - the task's failure, reported as such
        traceback.print_exc()
        outcome, code, what = ("error", exc), 1, "exception"
    try:
        blob = cloudpickle.dumps(outcome)
        pickle.loads(blob)
    except Exception as exc:  # noqa: BLE001
        blob = cloudpickle.dumps(("error", TypeError(
            f"the task's {what} could not be "
            f"pickled in the container: {type(exc).__name__}: {exc}")))
    with open(result, "wb") as f:
        f.write(blob)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
