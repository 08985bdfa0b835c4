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


def test_a_kept_file_is_read_back_only_when_closed_and_intact(tmp_path):
    """A resumable run's kept file (every item, checked frames, a close frame): read back
    whole when closed and intact; not closed, a byte changed or cut short: why, and no
    item (nothing left at the copy's path)."""
    from taskflow.runtime.streamitems import Closed, read_closed
    path, into = str(tmp_path / "s.items"), str(tmp_path / "copy")
    items = Items(path, memory=300, kept=True)
    blobs = [bytes([i]) * 50 for i in range(20)]
    for i, b in enumerate(blobs):
        items.append(b, 1 + i % 2)                          # (two producers)
    assert [items.get(i) for i in range(20)] == blobs       # (beyond memory: from the file)
    items.drop_before(20)
    assert "not closed" in read_closed(path, "s", into)
    items.closed(Closed("s", 20, ((1, "produce", 1), (2, "produce", 2))))
    items.close()
    assert os.path.exists(path) and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    got, closed = read_closed(path, "s", into)
    assert closed == Closed("s", 20, ((1, "produce", 1), (2, "produce", 2)))
    assert [got.get(i) for i in range(20)] == blobs
    assert list(got.tags or []) == [1 + i % 2 for i in range(20)]
    got.close()
    assert "does not match" in read_closed(path, "other", into)
    raw = bytearray(open(path, "rb").read())
    raw[len(raw) // 2] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    assert "damaged at byte" in read_closed(path, "s", into) and not os.path.exists(into)
    open(path, "wb").write(bytes(raw[:len(raw) // 3]))
    assert "not closed" in read_closed(path, "s", into)


def test_consumers_took_frames_are_read_before_and_after_the_close(tmp_path):
    """A kept file keeps, per consumer that ended well, which items it took (under its
    key): read back before and after the close frame; two with one key: None (their
    shares cannot be told apart); a took frame cut short after the close loses only it;
    an item after the close is a damage."""
    from taskflow.runtime.streamitems import Closed, read_closed
    path, into = str(tmp_path / "s.items"), str(tmp_path / "copy")
    items = Items(path, kept=True)
    for i in range(6):
        items.append(bytes([i]), 1)
    items.took(b"k-early", "first", (("default", 0, 2),))
    items.closed(Closed("s", 6, ((1, "produce", 1),)))
    items.took(b"k-late", "second", (("default", 2, 4), ("g", 0, 6)))
    items.took(b"k-twice", "third", ())
    items.took(b"k-twice", "third", (("default", 4, 6),))
    items.close()
    got, closed = read_closed(path, "s", into)
    assert closed.items == 6 and got.consumers == {
        b"k-early": (("default", 0, 2),), b"k-late": (("default", 2, 4), ("g", 0, 6)),
        b"k-twice": None}
    got.close()
    whole = open(path, "rb").read()
    open(path, "ab").write(b"t\x00")            # a took frame cut short: the rest is read
    got, _ = read_closed(path, "s", into)
    assert set(got.consumers or {}) == {b"k-early", b"k-late", b"k-twice"}
    got.close()
    more = Items(str(tmp_path / "more"), kept=True)
    more.append(b"x", 1)                        # an item frame, appended after the close
    more.close()
    from taskflow.runtime.streamitems import MAGIC
    extra = open(str(tmp_path / "more"), "rb").read()[len(MAGIC):]
    open(path, "wb").write(whole + extra)
    assert "damaged at byte" in read_closed(path, "s", into)
