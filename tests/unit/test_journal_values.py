"""Which parameter values the journal keeps by digest (journal/text.py): a pickle over the
threshold, from a snapshot the call made or from a value passed as it is; none without a
threshold (JournalDB made without one) and none in a journal written before they were
kept (its reader says no values)."""
from __future__ import annotations

import hashlib
import pickle
import sqlite3

from taskflow.graph.recorded import BY_DIGEST, Snapshot, same_kind, snapshot_ref, what
from taskflow.journal.reader import Journal
from taskflow.journal.text import params_text
from taskflow.journal.writer import JournalDB

INFO = ("m.f", '{"computing_units": 1}', ("a", "b"), "f")     # a spec as journal/wire.py sums it


def _sha(blob):
    return hashlib.sha256(blob).hexdigest()


def test_threshold_is_on_the_pickle_of_plain_values():
    at = "x" * (BY_DIGEST - 20)                     # a pickle of at most BY_DIGEST bytes
    over = "x" * (BY_DIGEST + 1)
    assert len(pickle.dumps(at, pickle.HIGHEST_PROTOCOL)) <= BY_DIGEST
    text, kept = params_text(("a", "b"), (1, at), None, None, BY_DIGEST)
    assert kept == [] and text.startswith("a=1, b='xxx") and text.endswith("...")
    text, kept = params_text(("a", "b"), (1, over), None, None, BY_DIGEST)
    blob = pickle.dumps(over, pickle.HIGHEST_PROTOCOL)
    assert kept == [["b", "str", BY_DIGEST + 1, len(blob), _sha(blob)]]
    assert text == f"a=1, b=<str of {BY_DIGEST + 1:,} characters, 1.0 kB, sha256:{_sha(blob)[:12]}…>"
    # a tuple of strings (kept in the call as it is: its length says nothing of its size)
    pair = ("y" * 800, "z" * 800)
    text, kept = params_text(("a",), (), {"a": pair}, None, BY_DIGEST)
    assert kept[0][:3] == ["a", "tuple", 2] and kept[0][4] == _sha(pickle.dumps(pair, 5))
    assert params_text(("a", "b"), (1, over), None, None, None)[1] == []   # no threshold


def test_snapshot_over_the_threshold_notes_what_it_is():
    small = [1, 2, 3]
    blob = pickle.dumps(small, pickle.HIGHEST_PROTOCOL)
    assert type(snapshot_ref(small, blob, [])) is tuple          # (most calls: as before)
    big = list(range(1000))
    blob = pickle.dumps(big, pickle.HIGHEST_PROTOCOL)
    ref = snapshot_ref(big, blob, [])
    assert type(ref) is Snapshot and ref.what == ("list", 1000)
    got, found = ref                                     # read as every snapshot is
    assert got is blob and found == []
    again = same_kind(ref, ["f"])                        # a call made again (lineage)
    assert type(again) is Snapshot and again.what == ref.what and again[1] == ["f"]
    assert type(same_kind((b"x", []), ["f"])) is tuple
    assert what(sqlite3.connect(":memory:")) == ("sqlite3.Connection", None)
    # the writer's side: the snapshot's pickle hashed, labelled by the parameter's name
    text, kept = params_text(("a", "b"), (1, None), None,
                             [((1,), "p", (blob, [], ref.what))], BY_DIGEST)
    assert kept == [["b", "list", 1000, len(blob), _sha(blob)]] and "b=<list of 1,000 items" in text


def test_values_row_and_an_older_journal(tmp_path):
    over = "q" * 5000
    row = ("run", 1.0, "running", "[]", "/", "host", 1, 2, "v")
    db = JournalDB(str(tmp_path / "journal.db"), row, BY_DIGEST)
    db.write(([], [(1, 10.0, INFO, [1, over], None, None, None),
                   (2, 10.0, INFO, [1, 2], None, None, None)], [], []))
    db.close_run(50.0, "finished", None, {"submitted": 2})
    with Journal(str(tmp_path)) as j:
        blob = pickle.dumps(over, pickle.HIGHEST_PROTOCOL)
        assert j.task(1)["values"] == [["b", "str", 5000, len(blob), _sha(blob)]]
        assert j.task(2)["values"] == [] and dict(j.each_values()) == {1: j.task(1)["values"]}
    # a journal from before values were kept: no VALUES rows, the text as it was
    old = tmp_path / "old"
    old.mkdir()
    db = JournalDB(str(old / "journal.db"), row)
    db.write(([], [(1, 10.0, INFO, [1, over], None, None, None)], [], []))
    db.close_run(50.0, "finished", None, {"submitted": 1})
    with Journal(str(old)) as j:
        t = j.task(1)
        assert t["values"] == [] and list(j.each_values()) == []
        assert t["params"].startswith("a=1, b='qqq") and t["params"].endswith("...")
