"""What the master tells every node agent it starts (``Hello``): the run's paths and
settings the agents and their executors need."""
from __future__ import annotations

import os
import sys
from typing import Any

from ...wire.messages import Hello

# TASKFLOW_NESTED_HERE=0 (or false, no, off): every call made in a task goes to the master
# and is placed as a top-level call is; by default a short plain call may run in its
# parent's executor (agent/executor/runhere.py)
NESTED_HERE_ENV = "TASKFLOW_NESTED_HERE"


def nested_here() -> bool:
    """Whether short plain calls in tasks may run in their parent's executor (the switch)."""
    return os.environ.get(NESTED_HERE_ENV, "1").strip().lower() not in ("0", "false", "no",
                                                                         "off")


def hello_config(data_dir: str, run_id: str, memory_budget: Any, memory_pause: Any,
                 io_executors: int, compss_env: bool, compss_nesting: bool,
                 resumed: bool) -> Hello:
    """The agents' configuration (Runtime.start's settings): a resumed run runs no call in
    its parent's executor (the master restores the calls that ended well before; one run
    there would run again)."""
    config: Hello = {"sys_path": [p for p in sys.path if p], "cwd": os.getcwd(),
                     "data_dir": data_dir, "run_id": run_id, "memory_budget": memory_budget,
                     "memory_pause": memory_pause, "nested_here": nested_here() and not resumed}
    if io_executors:
        config["io_executors"] = io_executors
    if compss_env:
        config["compss_env"] = True
        config["compss_nesting"] = compss_nesting
    return config
