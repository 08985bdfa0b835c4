"""A resumed run's adoption and a lost node's comeback (runtime/recovery/), driven with a
fake Comm: what they claim, cancel, send and count, with no node process.

An adopted agent lists the tasks it kept (``Adoptable``) in its node's info; a call
of the resumed run with the same key is claimed on that node, the others are
cancelled there at the program's first wait. A node back in the same run lists
the master's own tasks it kept: those that did not end meanwhile are its again
(taken back from another node if they went there), the others are stopped there.
"""
from __future__ import annotations

from support.fakes import FakeComm, dispatch, node, spec, state, task
from taskflow.future import Future
from taskflow.graph.task import Inout
from taskflow.runtime.loop.remote_values import RemoteValues
from taskflow.runtime.recovery.adopt import Adoption
from taskflow.runtime.recovery.comeback import Comebacks
from taskflow.wire import messages as M


def kept(task_id: int, key: bytes = b"", *, units: int = 1, done: bool = False,
         files: list[str] | None = None, started: bool = True) -> tuple:
    """What an agent lists of one task it kept (an ``Adoptable`` on the wire)."""
    return tuple(M.Adoptable(task_id, key, b"", None, units, done, files or [],
                             started or done))


def adopted(n, *entries: tuple, comm: FakeComm | None = None) -> Adoption:
    n.info["adoptable"] = list(entries)
    return Adoption([n], (comm or FakeComm()).wake)


# -- adoption: a resumed master takes over what the earlier run's agents kept ------------------

def test_a_call_with_a_kept_tasks_key_is_claimed_in_flight_on_its_node():
    n = node("n1", slots=2)
    st, comm = state(n)
    adoption = adopted(n, kept(7, b"K1"), comm=comm)
    assert adoption.open and n.used == 1        # the kept task holds its slot from the start
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    t.key = b"K1"
    assert adoption.claim(st, t)
    assert t.state == "DISPATCHED" and t.node is n and n.inflight == {t.id: t}
    assert n.used == 1 and comm.wakes == 1 and adoption.pending
    ((where, frame),) = adoption.frames()
    assert where is n and frame == M.Adopt([(7, t.id, [t.outputs[0]._did])], [])
    assert not adoption.pending
    assert adoption.summary() == "1 running task(s) adopted on n1"


def test_a_result_the_agent_held_is_collected_and_frees_the_slot_it_never_held():
    n = node("n1", slots=2)
    st, _ = state(n)
    adoption = adopted(n, kept(3, b"K", done=True))
    assert n.used == 0                          # it ended: it holds nothing
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    t.key = b"K"
    assert adoption.claim(st, t) and n.used == t.cus
    assert adoption.summary() == "1 result(s) collected that finished while no master was there"


def test_tasks_queued_behind_a_running_one_are_counted_as_queued_not_running():
    """A chained or prefetched task waiting on its executor behind the running one is
    adopted too, but said as queued (it had not started)."""
    n = node("n1", slots=2)
    st, _ = state(n)
    adoption = adopted(n, kept(1, b"R"), kept(2, b"Q1", started=False),
                       kept(3, b"Q2", started=False))
    for key in (b"R", b"Q1", b"Q2"):
        t = task(spec(), st=st)
        st.scheduler.ready.pop()
        t.key = key
        assert adoption.claim(st, t)
    assert (adoption.adopted, adoption.queued) == (1, 2)
    assert adoption.summary() == ("1 running task(s) adopted on n1; 2 queued task(s) adopted "
                                  "(waiting there behind a running one: not started yet)")


def test_a_call_whose_key_no_agent_kept_is_not_claimed():
    n = node("n1")
    st, comm = state(n)
    adoption = adopted(n, kept(7, b"K1"), comm=comm)
    t = task(spec(), st=st)
    t.key = b"other"
    assert not adoption.claim(st, t)
    assert t.state == "READY" and not n.inflight and comm.wakes == 0


def test_kept_tasks_no_call_claimed_are_cancelled_at_the_first_wait_and_free_their_slots():
    n = node("n1", slots=2)
    st, comm = state(n)
    adoption = adopted(n, kept(7, b"K1"), kept(8, b"K2", units=1), comm=comm)
    assert n.used == 2
    adoption.cancel_rest(st)
    assert not adoption.open and n.used == 0 and comm.wakes == 1
    ((where, frame),) = adoption.frames()
    assert where is n and frame.claimed == [] and sorted(frame.cancelled) == [7, 8]


def test_a_kept_task_that_was_no_plain_call_is_cancelled_in_the_first_round():
    n = node("n1")
    adoption = adopted(n, kept(5))              # no key, no code digest: nothing matches it
    assert adoption.pending                     # sent without waiting for any call
    ((_, frame),) = adoption.frames()
    assert frame == M.Adopt([], [5])


def _writes_a_file(st) -> tuple:
    t = task(spec(), st=st)
    t.key = b"K"
    version = Future(None, None, 1000)
    t.inouts = [Inout((0,), M.OUT_FILE, "out", version)]
    return t, version


def test_a_claimed_call_that_writes_a_file_keeps_the_version_the_earlier_master_planned():
    n = node("n1")
    st, _ = state(n)
    adoption = adopted(n, kept(7, b"K", files=["/earlier/run/data/d1v1"]))
    t, version = _writes_a_file(st)
    assert adoption.claim(st, t)
    assert version._path == "/earlier/run/data/d1v1"


def test_a_claimed_call_that_writes_files_on_a_node_of_its_own_disk_runs_again():
    n = node("n1")
    n.stager = object()                         # no shared filesystem with the master
    st, _ = state(n)
    adoption = adopted(n, kept(7, b"K", files=["/earlier/run/data/d1v1"]))
    t, version = _writes_a_file(st)
    assert not adoption.claim(st, t)
    assert version._path != "/earlier/run/data/d1v1" and not n.inflight


# -- comeback: a node the running master lost, back in the same run ---------------------------

def _lost_with(st, n, t) -> Comebacks:
    comebacks = Comebacks()
    comebacks.node_lost(n, [t])
    n.inflight.clear()
    n.used = 0
    n.alive = False
    return comebacks


def _back(n, *entries: tuple, held: list[int] | None = None):
    n.alive = True
    n.info["adoptable"] = list(entries)
    n.info["held"] = held or []


def test_a_task_back_in_the_ready_queue_is_the_nodes_again_and_runs_nowhere_else():
    n = node("h1", slots=2)
    st, comm = state(n)
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(t, n)
    t.state = "RUNNING"
    comebacks = _lost_with(st, n, t)
    t.state, t.node = "READY", None             # its loss put it back in the queue
    t.crashes = 1
    st.scheduler.push(t)
    st.tally.retried()
    _back(n, kept(t.id))
    back = comebacks.back(st, RemoteValues(comm.wake), n, 23.4)
    assert st.scheduler.tasks() == []           # not placed again: it is running on h1
    assert t.state == "RUNNING" and t.node is n and n.inflight == {t.id: t} and n.used == 1
    assert t.crashes == 0 and st.tally.retries == 0     # its worker did not die
    (frame,) = comebacks.take_frames()
    assert frame == (n, M.ADOPT, M.Adopt([(t.id, t.id, [t.outputs[0]._did])], []))
    assert (back.running, back.held, back.cancelled) == (1, 0, 0)
    assert back.line() == "h1 back after 23 s: 0 held results used, 1 running task kept"
    assert comebacks.summary() == back.line()


def test_a_task_sent_elsewhere_meanwhile_is_taken_back_from_there():
    h1, h2 = node("h1"), node("h2")
    st, comm = state(h1, h2)
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(t, h1)
    comebacks = _lost_with(st, h1, t)
    dispatch(t, h2)                             # placed again on h2
    _back(h1, kept(t.id, done=True))            # h1 had finished it meanwhile
    back = comebacks.back(st, RemoteValues(comm.wake), h1, 5.0)
    assert comm.cancelled == [("h2", t.id)] and t.id not in h2.inflight and h2.used == 0
    assert t.node is h1 and t.state == "DISPATCHED" and h1.inflight == {t.id: t}
    assert back.held == 1 and back.running == 0


def test_a_task_that_ended_meanwhile_is_stopped_on_the_node_back():
    n = node("h1")
    st, comm = state(n)
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(t, n)
    comebacks = _lost_with(st, n, t)
    t.state = "DONE"                            # it ran again elsewhere and ended
    _back(n, kept(t.id), kept(99))              # (99: a task this run never lost there)
    back = comebacks.back(st, RemoteValues(comm.wake), n, 1.0)
    (frame,) = comebacks.take_frames()
    assert frame == (n, M.ADOPT, M.Adopt([], [t.id, 99]))
    assert back.cancelled == 2 and not n.inflight and n.used == 0
    assert "2 finished elsewhere meanwhile (stopped there)" in back.line()


def test_values_the_node_still_holds_that_nobody_uses_are_dropped_there():
    n = node("h1")
    st, comm = state(n)
    remote = RemoteValues(comm.wake)
    comebacks = Comebacks()
    _back(n, held=[41, 42])
    back = comebacks.back(st, remote, n, 2.0)
    (frame,) = comebacks.take_frames()
    assert frame == (n, M.DROP, [41, 42]) and back.values == 0


def test_a_node_back_with_a_fresh_agent_says_so():
    n = node("h1")
    st, comm = state(n)
    comebacks = Comebacks()
    n.info["held"] = []                         # a new agent lists nothing it kept
    back = comebacks.back(st, RemoteValues(comm.wake), n, 30.0)
    assert back.fresh and comebacks.take_frames() == []
    assert back.line() == "h1 back after 30 s (with a fresh agent: the one it had was gone)"


def test_the_comebacks_keep_the_lost_tasks_only_until_their_node_is_back():
    n = node("h1")
    st, comm = state(n)
    t = task(spec(), st=st)
    comebacks = _lost_with(st, n, t)
    assert list(comebacks.lost) == ["h1"]
    _back(n)
    comebacks.back(st, RemoteValues(comm.wake), n, 1.0)
    assert comebacks.lost == {}


# -- the resume log and the bus: a finished task is not held while its value is on a node ------

def test_a_task_whose_value_stayed_on_its_node_goes_to_the_resume_log_at_once():
    """In a burst the bus holds the tasks that ended well for the resume log until it is
    over; a task held keeps its future, and so the value, alive: one that stayed on its node
    would not be dropped there (20,000 values of 1 MiB held ~700 MB in the agent). Such
    tasks (and keyed ones: nothing to batch) go to the log at the delivery they come in."""
    import time
    from types import SimpleNamespace

    from taskflow.runtime.bus import EventBus
    from taskflow.runtime.recovery.log import ResumeLog

    def done(ordinal, payload, key=None):
        return SimpleNamespace(key=key, ordinal=ordinal,
                               outputs=[SimpleNamespace(_payload=payload)])
    held, inline, keyed = done(1, None), done(2, b"\x80\x04K\x01."), done(3, b"x", key=b"K")
    got = []
    bus = EventBus()
    bus._ended_hook, bus._ended_now = got.append, ResumeLog.at_once     # (no bus thread)
    bus._ended_well([held, inline, keyed], False, time.monotonic())    # in a burst
    assert got == [[held, keyed]]
    bus._ended_well([], True, time.monotonic())                         # the burst is over
    assert got == [[held, keyed], [inline]]


def test_a_task_that_called_tasks_is_stopped_on_the_node_back_and_runs_again():
    """Its loss cancelled the children its attempt called (and closed its streams): the
    copy kept on the node back cannot go on, the task runs again as it was to."""
    from taskflow.graph.nestrecord import NestRecord
    n = node("h1")
    st, comm = state(n)
    t = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(t, n)
    t.nest = NestRecord(t, n)                   # it called tasks on h1
    comebacks = _lost_with(st, n, t)
    t.state, t.node, t.nest = "READY", None, None   # its loss put it back in the queue
    st.scheduler.push(t)
    _back(n, kept(t.id))
    back = comebacks.back(st, RemoteValues(comm.wake), n, 2.0)
    (frame,) = comebacks.take_frames()
    assert frame == (n, M.ADOPT, M.Adopt([], [t.id]))
    assert st.scheduler.tasks() == [t] and not n.inflight       # it runs again
    assert back.callers == 1 and back.running == 0
    assert "1 that called tasks or used a stream run again (stopped there)" in back.line()
