"""The wire: frames, the named messages, and the split of the two sides."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import typing

import pytest

from taskflow.errors import ProtocolError
from taskflow.wire import messages as M
from taskflow.wire import protocol as P

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_frames_round_trip_whole_and_in_pieces():
    r, w = os.pipe()
    try:
        frames = [(M.TASKS, [(1, b"d", (1,), None, None, 1, None, None, 0, 1, False, [2])]),
                  (M.FUNC, M.Func(b"d", b"payload")), (M.SHUTDOWN, None)]
        data = b"".join(P.encode(op, body) for op, body in frames)
        reader = P.FrameReader(r)
        got = []
        for i in range(0, len(data), 7):           # a stream cut anywhere
            got += reader.feed_bytes(data[i:i + 7])
        assert got == frames and reader.pending() == 0
        P.write_all(w, data)
        assert P.FrameReader(r).feed() == frames
    finally:
        os.close(r)
        os.close(w)


def test_garbage_is_a_protocol_error_not_a_crash():
    reader = P.FrameReader(-1)
    with pytest.raises(ProtocolError, match="not a taskflow peer"):
        reader.feed_bytes(b"\xff\xff\xff\xff" + b"x" * 10)
    with pytest.raises(ProtocolError, match="undecodable frame"):
        P.FrameReader(-1).feed_bytes(b"\x00\x00\x00\x03abc")


def test_each_wire_tuple_has_the_fields_of_its_named_tuple():
    for named, wire in ((M.TaskMsg, M.TaskWire), (M.ResultMsg, M.ResultWire),
                        (M.Ref, M.RefWire)):
        assert len(typing.get_args(wire)) == len(named._fields), named.__name__
    t = M.tasks([(7, b"d", (1, 2), None, {"k": 1}, 1, None, None, 3, 2, True, [8])])[0]
    assert (t.task_id, t.priority, t.units, t.exclusive, t.outputs) == (7, 3, 2, True, [8])
    assert type(M.wire_tasks([t])[0]) is tuple        # plain again before pickling


def test_codes_are_distinct():
    ops = [M.HELLO, M.FUNC, M.TASKS, M.DATA, M.FETCH, M.DROP, M.CANCEL, M.SHUTDOWN,
           M.READY, M.RESULTS, M.LOG, M.SAMPLE, M.FATAL, M.LEAVING]
    assert len(set(ops)) == len(ops)
    kinds = [M.REF_VALUE, M.REF_PICKLED, M.REF_FILE, M.REF_FILE_OUT, M.REF_DIR_OUT,
             M.REF_FILE_INOUT, M.REF_DIR_INOUT]
    assert sorted(kinds) == sorted(typing.get_args(M.RefKind))
    assert len({M.OK, M.ERROR, M.TIMEOUT, M.LOST, M.CANCELLED_ON_NODE}) == 5


def test_cold_messages_pickle_as_themselves():
    for msg in (M.Held(3, 10), M.ErrorInfo("E", "m", "tb", None), M.Leaving("idle", [1])):
        assert pickle.loads(pickle.dumps(msg)) == msg
        assert type(pickle.loads(pickle.dumps(msg))) is type(msg)


def test_the_node_side_loads_nothing_of_the_master():
    code = ("import sys, taskflow.agent.agent, taskflow.agent.executor, taskflow.agent.dialback\n"
            "print(sorted(m for m in sys.modules if m.startswith('taskflow.') and not "
            "m.startswith(('taskflow.agent', 'taskflow.wire', 'taskflow.errors', "
            "'taskflow.context', 'taskflow._version'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
