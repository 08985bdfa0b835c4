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

from support.paths import ROOT


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


def _values():
    import numpy as np
    from taskflow.wire import values as V
    arr = np.arange(300_000, dtype=np.float64).reshape(600, 500)      # 2.4 MB
    fort = np.asfortranarray(arr[:, :400])                             # Fortran order
    blob = bytes(range(256)) * 1000                                     # 256 KB of bytes
    small = {"k": [1, 2, 3]}
    return arr, fort, blob, small, [V.dump(v) for v in (arr, fort, blob, small)]


def test_large_values_travel_out_of_band_and_come_back_equal():
    import numpy as np
    from taskflow.wire import values as V
    arr, fort, blob, small, payloads = _values()
    assert [type(p) for p in payloads] == [M.Packed, M.Packed, M.Packed, bytes]
    assert len(payloads[0].head) < 300        # the array's memory is not in the pickle
    frames = [(M.DATA, list(enumerate(payloads))), (M.SHUTDOWN, None),
              (M.DATA, [(9, payloads[2])])]
    parts = [p for op, body in frames for p in P.encode_parts(op, body)]
    stream = b"".join(bytes(p) for p in parts)
    assert len(stream) < arr.nbytes + fort.nbytes + 2 * len(blob) + 4096   # no copy twice
    for step in (7, 4096, 1 << 20, len(stream)):        # cut anywhere
        reader = P.FrameReader(-1)
        got = []
        for i in range(0, len(stream), step):
            got += reader.feed_bytes(stream[i:i + step])
        assert [op for op, _ in got] == [M.DATA, M.SHUTDOWN, M.DATA]
        back = [V.load(p) for _, p in got[0][1]]
        assert np.array_equal(back[0], arr) and np.array_equal(back[1], fort)
        assert back[1].flags.f_contiguous and back[2] == blob and back[3] == small
        assert V.load(got[2][1][0][1]) == blob


def test_a_frame_with_buffers_is_read_straight_from_a_pipe(tmp_path):
    """Writer and reader on both ends of a real pipe, the frame bigger than the pipe."""
    import threading
    import numpy as np
    from taskflow.wire import values as V
    big = np.random.default_rng(1).random(1_000_000)           # 8 MB, > the pipe
    r, w = os.pipe()
    try:
        parts = P.encode_parts(M.DATA, [(1, V.dump(big))]) + P.encode_parts(M.SHUTDOWN, None)
        t = threading.Thread(target=P.write_parts, args=(w, parts))
        t.start()
        reader = P.FrameReader(r)
        got: list = []
        while len(got) < 2:
            more = reader.feed()
            assert more is not None
            got += more
        t.join()
        (did, payload), = got[0][1]
        value = V.load(payload, take=True)
        assert np.array_equal(value, big) and value.flags.writeable
        assert got[1] == (M.SHUTDOWN, None)
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
    code = ("import sys, taskflow.agent.agent, taskflow.agent.executor.loop, taskflow.agent.dialback\n"
            "print(sorted(m for m in sys.modules if m.startswith('taskflow.') and not "
            "m.startswith(('taskflow.agent', 'taskflow.wire', 'taskflow.errors', "
            "'taskflow.context', 'taskflow._version'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
