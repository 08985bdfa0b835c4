"""A small ensemble forecast: the workflow of the documentation's pictures.

tests/surfaces/test_doc_pictures.py copies it as ``forecast.py``, runs it with
``taskflow run`` and photographs the monitor, the report, the graph and the Gantt
chart of that run (``make pictures`` writes them into docs/images/).

    taskflow run forecast.py [DAYS] [MEMBERS]

Per day: fetch the readings, clean them, check them (day 2's check fails, and the
script goes on without it), run an ensemble of MEMBERS simulations, summarise them;
the last day's simulations also need the global model's boundary conditions. Last,
every day's summary is published to forecast.csv. When $FORECAST_HOLD names a file,
the boundary conditions come when it exists (at most 60 s): the test photographs the
run live meanwhile.
"""
import math
import os
import random
import sys
import time

from taskflow import FILE_OUT, TaskError, task, wait_on, wait_on_file


@task(returns=list)
def fetch(day):
    rng = random.Random(day)
    time.sleep(0.2)
    readings = [15 + 8 * math.sin(h / 24 * 2 * math.pi) + rng.gauss(0, 1) for h in range(24)]
    if day == 2:
        readings[5:8] = [99.9] * 3                      # a stuck sensor
    print(f"day {day}: {len(readings)} hourly readings")
    return readings


@task(returns=list)
def clean(readings):
    time.sleep(0.1)
    return [round(x, 1) for x in readings]


@task(returns=bool, on_failure="FAIL")
def check(day, readings):
    bad = [h for h, x in enumerate(readings) if not -30 < x < 40]
    if bad:
        raise ValueError(f"day {day}: {len(bad)} readings out of range, at hours {bad}")
    return True


@task(returns=float)
def boundary(day, hold=None):
    """The global model's boundary conditions for the forecast day (they come late)."""
    start = time.time()
    while hold and not os.path.exists(hold) and time.time() - start < 60:
        print(f"waiting for the global model ({time.time() - start:.1f} s)")
        time.sleep(0.5)
    time.sleep(0.2)
    return 0.8


def _burn(seconds):
    """Busy for about ``seconds``: a simulation uses its core."""
    end, x = time.time() + seconds, 0.0
    while time.time() < end:
        x = math.sin(x) + 1.0
    return x


@task(returns=float)
def simulate(readings, day, member, offset=0.0):
    _burn(0.3 + 0.05 * member)
    peak = max(x for x in readings if -30 < x < 40) + offset
    peak += random.Random(day * 100 + member).gauss(0, 0.5)
    print(f"day {day} member {member}: peak {peak:.1f} C")
    return peak


@task(returns=dict)
def summarise(day, *peaks):
    time.sleep(0.1)
    mean = sum(peaks) / len(peaks)
    return {"day": day, "mean": round(mean, 2), "spread": round(max(peaks) - min(peaks), 2)}


@task(path=FILE_OUT)
def publish(path, summaries):
    with open(path, "w") as f:
        f.write("day,mean,spread\n")
        for s in summaries:
            f.write(f"{s['day']},{s['mean']},{s['spread']}\n")


def main(days: int = 3, members: int = 4) -> None:
    checks, summaries = [], []
    for day in range(1, days + 1):
        readings = clean(fetch(day))
        checks.append((day, check(day, readings)))
        offset = boundary(day, os.environ.get("FORECAST_HOLD")) if day == days else 0.0
        peaks = [simulate(readings, day, m, offset) for m in range(members)]
        summaries.append(summarise(day, *peaks))
    publish("forecast.csv", summaries)
    for day, ok in checks:
        try:
            wait_on(ok)
        except TaskError as e:
            print(f"day {day} left unchecked: {e.__cause__ or e}")
    wait_on_file("forecast.csv")
    print(open("forecast.csv").read(), end="")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
