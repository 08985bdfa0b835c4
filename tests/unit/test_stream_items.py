"""A stream's items at the master: bounded in memory, the rest on disk (runtime.streamitems)."""
from __future__ import annotations

import os
import stat

from taskflow.runtime.streamitems import Items


def test_items_beyond_the_memory_bound_go_to_a_user_only_file_and_come_back_in_order(
        tmp_path):
    path = str(tmp_path / "s.items")
    items = Items(path, memory=1000)
    blobs = [bytes([i % 251]) * 100 for i in range(50)]
    for b in blobs:
        items.append(b)
    assert items.held <= 1000 and items.spilled == 40
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [items.get(i) for i in range(50)] == blobs
    items.drop_before(30)
    assert items.first == 30 and [items.get(i) for i in range(30, 50)] == blobs[30:]
    items.drop_before(50)
    assert items.end == 50 and os.path.getsize(path) == 0      # read by all: the file empties
    items.append(b"x" * 2000)                                   # too big for memory: on disk
    assert items.get(50) == b"x" * 2000
    items.close()
    assert not os.path.exists(path)
