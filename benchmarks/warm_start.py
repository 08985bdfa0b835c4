"""A script that imports heavy libraries: when does its first task start?

The figure of issue 41: from the process's launch to the first task's start,
against the script's own import time (a fresh interpreter importing the same
modules, launch to end of imports), measured in the same sitting, interleaved.

Modes (each a fresh process per round):

- ``run``: ``taskflow run -w 2 script.py`` (the runtime starts before the script
  imports anything: executors can import while the script does);
- ``start``: ``python script.py`` that calls ``taskflow.start()`` first and
  imports after it;
- ``embedded``: ``python script.py`` that imports first; its first task call
  starts the runtime.

The task uses numpy, scipy.linalg and (if installed) sklearn.linear_model:
loading it on an executor imports them there. ``TASKFLOW_PRELOAD=0`` in the
environment turns the executors' pre-import off (``--compare`` runs both).

    python benchmarks/warm_start.py [--rounds 3] [--modes run,start,embedded] [--compare]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _modules() -> list[str]:
    mods = ["numpy", "scipy.linalg"]
    for m in mods:
        try:
            __import__(m)
        except ImportError as exc:
            raise SystemExit(f"warm_start.py: the workload imports {m}, which this Python "
                             f"lacks ({exc}): pip install numpy scipy") from None
    try:
        import sklearn  # noqa: F401
        mods.append("sklearn.linear_model")
    except ImportError:
        pass
    return mods


def _script(mode: str, mods: list[str]) -> str:
    imports = "\n".join(f"import {m}" for m in mods)
    uses = ", ".join(f"{m}.__name__" for m in mods)
    head = "import taskflow\ntaskflow.start(workers=2)\n" if mode == "start" else ""
    return f"""\
import time
t_script = time.time()
import json, os, sys
{head}{imports}
t_imported = time.time()
from taskflow import task, wait_on

@task(returns=1)
def first():
    t = time.time()
    ({uses})
    return t

t_first = wait_on(first())
print(json.dumps({{"script": t_script, "imported": t_imported, "first": t_first}}))
"""


def _import_time(mods: list[str]) -> float:
    code = "import " + ", ".join(mods)
    t0 = time.time()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.time() - t0


def _one(mode: str, path: str, env: dict[str, str]) -> tuple[float, float, float]:
    cmd = [sys.executable, "-m", "taskflow", "run", "-w", "2", "--no-progress", path] \
        if mode == "run" else [sys.executable, path]
    t0 = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(path))
    line = [x for x in out.stdout.splitlines() if x.startswith("{")][-1]
    got = json.loads(line)
    # (launch -> first task, script's first line -> its imports done, -> first task)
    return got["first"] - t0, got["imported"] - got["script"], got["first"] - got["script"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="run,start,embedded")
    ap.add_argument("--compare", action="store_true",
                    help="also with TASKFLOW_PRELOAD=0 (executors import nothing ahead)")
    args = ap.parse_args()
    mods = _modules()
    modes = args.modes.split(",")
    variants = [("preload", "1")] + ([("no-preload", "0")] if args.compare else [])
    figures: dict[str, list[float]] = {"import": []}
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for mode in modes:
            paths[mode] = os.path.join(d, f"ws_{mode}.py")
            with open(paths[mode], "w") as f:
                f.write(_script(mode, mods))
        for _ in range(args.rounds):
            figures["import"].append(_import_time(mods))
            for mode in modes:
                for vname, flag in variants:
                    env = dict(os.environ, TASKFLOW_PRELOAD=flag)
                    first, imp_in, first_in = _one(mode, paths[mode], env)
                    figures.setdefault(f"{mode}/{vname}", []).append(first)
                    figures.setdefault(f"{mode}/{vname}/in-script", []).append(
                        first_in / imp_in)
    imp = statistics.median(figures["import"])
    print(f"modules: {', '.join(mods)}; {args.rounds} rounds, medians")
    print("| what | s from launch | / import time |\n|---|---|---|")
    print(f"| fresh interpreter importing them | {imp:.2f} | 1.00 |")
    for key, vals in figures.items():
        if key != "import" and not key.endswith("in-script"):
            m = statistics.median(vals)
            r = statistics.median(figures[key + "/in-script"])
            print(f"| first task starts: {key} | {m:.2f} | {m / imp:.2f} |")
            print(f"| ... from the script's first line / its own imports there: {key} | "
                  f"| {r:.2f} |")


if __name__ == "__main__":
    main()
