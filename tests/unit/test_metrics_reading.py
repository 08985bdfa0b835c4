"""/metrics counts each task once, ended or not, whatever order the journal's rows go in
(taskflow/metrics/reading.py): the scrape's mark of "every task below has ended" never
moves past a task whose row is not in the journal yet."""
from __future__ import annotations

import os

from taskflow.journal.schema import JOURNAL_NAME
from taskflow.journal.writer import JournalDB
from taskflow.metrics.reading import RunReading

INFO = ("m.quick", '{"computing_units": 1}', ("i",), "quick")   # a spec as journal/wire.py sums it
RUN = ("r", 0.0, "running", "[]", "/", "h", 1, 1, "v")


def _whole(tid: int) -> tuple:
    # (task id, t_submit, spec, argv, kwargs, refs, deps, t0, t1, t_dispatch, node, attempts,
    # exit code): submitted and ended well within one delivery
    return (tid, 1.0, INFO, (tid,), None, None, None, 2.0, 3.0, 1.5, "n", 1, None)


def test_a_row_the_writer_still_holds_is_counted_when_it_goes_in(tmp_path):
    """Tasks 1, 2, 3 and 5 ended; task 4's row is still in the writer's hands (its task has
    not ended: JournalDB.HOLD). A scrape then sees rows 1, 2, 3, 5, all ended; task 4,
    ended later, is counted too."""
    db = JournalDB(os.path.join(tmp_path, JOURNAL_NAME), RUN)
    db.HOLD = 3600.0                    # (task 4's row stays in hand until it ends)
    db.write(([_whole(1), _whole(2), _whole(3), _whole(5)],
              [(4, 1.0, INFO, (4,), None, None, None)], [], []))
    reading = RunReading(str(tmp_path))
    try:
        assert reading.read().tasks == {("quick", "DONE"): 4}
        # (task id, t_start, t_end, t_dispatch, node, attempts, name, exit code)
        db.write(([], [], [], [(4, 2.0, 3.0, 1.5, "n", 1, "quick", None)]))
        assert reading.read().tasks == {("quick", "DONE"): 5}
        db.write(([_whole(6)], [], [], []))
        assert reading.read().tasks == {("quick", "DONE"): 6}
    finally:
        reading.close()
        db.db.close()
