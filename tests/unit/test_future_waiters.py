"""A taskflow Future finished by the runtime's thread while concurrent.futures waits on it:
each is yielded once by as_completed, none is missed (a state changed outside the
future's condition and its waiters told later gave some twice)."""
from __future__ import annotations

import concurrent.futures as cf
import threading

from taskflow.future import Future


def _finish_all(futs: list[Future], go: threading.Event) -> None:
    go.wait()
    for f in futs:
        f.finish(b"x", [])


def test_as_completed_yields_each_future_once_while_they_finish():
    for _ in range(20):
        futs = [Future() for _ in range(2000)]
        go = threading.Event()
        t = threading.Thread(target=_finish_all, args=(futs, go))
        t.start()
        seen = []
        it = cf.as_completed(futs, timeout=60)
        go.set()
        seen.extend(it)
        t.join()
        assert len(seen) == len(futs) and set(seen) == set(futs)
        done, not_done = cf.wait(futs, timeout=60)
        assert len(done) == len(futs) and not not_done
