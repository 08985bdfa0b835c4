"""The journal takes plain data only: a program's own objects never reach its writer.

The writer process loads none of the program's modules; an object of the program's
classes in a row (a dictionary collection's keys stay in the call's arguments) used to
end it (``No module named 'my_class'``) and the run with it (PyCOMPSs's
1_dict_collections and 4_worker_in_master)."""
from __future__ import annotations

import collections
import enum
import os
import pickle
import sqlite3
import subprocess
import sys

import pytest

from taskflow.journal.child import load_plain
from taskflow.journal.wire import EventPickler

MODULE = '''
class Wrapper:
    def __init__(self, content):
        self.content = content

    def __repr__(self):
        return f"Wrapper({self.content})"
'''

APP = '''
from taskflow import task, wait_on, COLLECTION_INOUT, INOUT
from my_class import Wrapper


@task(d=COLLECTION_INOUT)
def bump_all(d):
    for k in d:
        d[k].content += 1


@task(w=INOUT)
def bump(w):
    w.content += 1


@task(returns=1)
def make(n, tag, pair):
    return Wrapper(n)


d = {Wrapper(1): Wrapper(10), Wrapper(2): Wrapper(20)}
bump_all(d)
w = Wrapper(5)
bump(w)
r = make(7, tag=Wrapper("kw"), pair=(Wrapper("a"), 1))
d = wait_on(d)
print("result", sorted(v.content for v in d.values()), wait_on(w).content, wait_on(r).content)
'''


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_objects_of_the_programs_own_classes_run_to_the_end_with_a_journal(tmp_path, mode):
    (tmp_path / "my_class.py").write_text(MODULE)
    (tmp_path / "app.py").write_text(APP)
    env = {**os.environ, "TASKFLOW_JOURNAL": mode}
    env.pop("PYTHONPATH", None)         # the writer must not find my_class anywhere
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress",
                        "--run-dir", str(tmp_path / "runs"), "app.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "result [11, 21] 6 7" in r.stdout
    (run_id,) = os.listdir(tmp_path / "runs")
    db = sqlite3.connect(tmp_path / "runs" / run_id / "journal.db")
    assert db.execute("SELECT state FROM run").fetchone() == ("finished",)
    params = dict(db.execute("SELECT name, params FROM tasks").fetchall())
    assert params["bump_all"] == "d={Wrapper(1): None, Wrapper(2): None}"   # the keys' reprs
    assert params["bump"].startswith("w=<data d")
    assert set(params) == {"bump_all", "bump", "make"}


class _Colour(enum.IntEnum):
    RED = 3


_Pair = collections.namedtuple("_Pair", "a b")


class _Mine:
    def __repr__(self) -> str:
        return "Mine()"


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_the_pickler_reduces_every_object_of_a_non_builtin_type_to_plain_data():
    row = ([_Mine(), (_Mine(), 1.5)], {_Mine(): _Colour.RED}, 2 + 1j, ValueError("bad"),
           _Unprintable(), {"n": 7, "s": "x", "b": b"y", "none": None, "set": {1, 2}},
           _Pair(1, _Mine()), collections.OrderedDict(a=_Pair(2, 3)))
    got = load_plain(EventPickler().dumps(row))      # the writer's own unpickler
    objs, keyed, c, err, unprintable, plain, pair, ordered = got
    assert type(pair) is tuple and repr(pair) == "(1, Mine())"
    assert type(ordered) is dict and ordered == {"a": (2, 3)}
    assert [repr(objs[0]), repr(objs[1])] == ["Mine()", "(Mine(), 1.5)"]
    assert repr(keyed) == "{Mine(): 3}" and type(next(iter(keyed.values()))) is int
    assert c == 2 + 1j
    assert err == ("bad", None, None)               # an exception: its ErrorInfo
    assert "repr failed: no repr" in unprintable
    assert plain == row[5]


def test_the_writer_refuses_any_other_class_by_name():
    body = pickle.dumps(("events", [_Mine()]), pickle.HIGHEST_PROTOCOL)
    with pytest.raises(pickle.UnpicklingError, match=r"test_journal_plain\._Mine: the "
                                                     r"journal takes plain data only"):
        load_plain(body)
