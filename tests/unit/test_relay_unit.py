"""The relay's rules with no process: parts asked for, forwarded, flow control, failures."""
from __future__ import annotations

import pickle
import threading

from support.fakes import node, state

from taskflow.future import FINISHED, Future
from taskflow.runtime.loop import relay as R
from taskflow.wire import messages as M


def _held(did: int, *holders: str) -> Future:
    f = Future(None, None, did)
    f._state = FINISHED
    f._holders = set(holders)
    return f


def _setup():
    a, b = node("a"), node("b")
    st, comm = state(a, b)
    return st, comm, a, b, R.Relay(st)


def test_a_copy_is_asked_for_in_parts_as_the_destination_takes_them():
    st, _, a, b, relay = _setup()
    fut = _held(7, "a")
    ev = threading.Event()
    assert relay.request(fut, b, ev)
    assert relay.pulls() == {a: [(7, 0, R.PART)]}       # the first part tells the size
    assert relay.pulls() == {}                          # nothing more until it came
    total = 10 * R.PART + 5
    relay.parts(a, [(7, 0, total, b"x" * R.PART)])
    (dst, parts), = relay.take_forward()
    assert dst is b and len(parts) == 3                 # head, pickle, the part out of band
    wanted = relay.pulls()[a]
    assert len(wanted) == R.WINDOW                     # the window: parts not yet forwarded
    assert all(n == R.PART for _, _, n in wanted)
    # the destination has taken nothing yet: its backlog stops more asking
    b.out.queue(bytes(R.BACKLOG))
    for _, off, n in wanted:
        relay.parts(a, [(7, off, total, b"y" * n)])
    assert relay.pulls() == {}
    b.out.discard()                                      # written: more may come
    rest = relay.pulls()[a]
    assert rest and rest[-1][1] + rest[-1][2] <= total
    assert not ev.is_set() and fut._holders == {"a"}


def test_the_last_part_makes_the_destination_a_holder_and_releases_the_waiters():
    st, comm, a, b, relay = _setup()
    fut = _held(8, "a")
    ev = threading.Event()
    relay.request(fut, b, ev)
    relay.pulls()
    relay.parts(a, [(8, 0, 100, b"z" * 100)])
    assert ev.is_set() and fut._holders == {"a", "b"} and not relay.copies
    (dst, parts), = relay.take_forward()
    body = pickle.loads(parts[1], buffers=[bytearray(p) for p in parts[2:]])
    assert body[0] == M.PART and body[1][0][:3] == (8, 0, 100)


def test_a_source_without_the_value_hands_the_copy_to_another_holder():
    c = node("c")
    st, comm, a, b, relay = _setup()
    st.scheduler.nodes.append(c)
    fut = _held(9, "a", "c")
    ev = threading.Event()
    relay.request(fut, b, ev)
    assert list(relay.pulls()) == [a]
    relay.parts(a, [(9, 0, -1, None)])                   # a dropped it meanwhile
    assert fut._holders == {"c"} and list(relay.pulls()) == [c]
    relay.node_lost(c)                                   # and c is lost: nobody has it
    assert ev.is_set() and not relay.copies              # (no lineage: the waiter goes on)


def test_copies_to_a_lost_node_end_and_their_waiters_go_on():
    st, _, a, b, relay = _setup()
    fut = _held(10, "a")
    ev = threading.Event()
    relay.request(fut, b, ev)
    relay.node_lost(b)
    assert ev.is_set() and not relay.copies and fut._holders == {"a"}


def test_a_finished_copy_says_what_it_moved_for_whom_and_how_long_it_took():
    st, _, a, b, relay = _setup()
    moved = []
    st.bus.active = True
    st.bus.emit = moved.append                  # (the bus's delivery is not this test's)
    fut = _held(9, "a")
    fut._tid = 4                                # made by task 4
    reader = type("T", (), {"id": 12, "state": "WAITING"})()
    relay.request(fut, b, reader)
    relay.pulls()
    relay.parts(a, [(9, 0, 100, b"z" * 100)])
    (ev,) = moved
    kind, t, tid, _, dst, (t0, size, src, producer) = ev
    assert (kind, tid, dst, size, src, producer) == ("moved", 12, "b", 100, "a", 4)
    assert t0 <= t
