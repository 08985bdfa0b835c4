"""Tasks of the stream tests (tests/core/test_streams.py): importable by every node."""
from __future__ import annotations

import os
import time

from taskflow import FILE_IN, FILE_OUT, STREAM_IN, STREAM_OUT, task


@task(s=STREAM_OUT)
def produce(s, n, start=0, close=True):
    for i in range(start, start + n):
        s.publish(i)
    if close:
        s.close()


@task(s=STREAM_OUT)
def produce_then_fail(s, n):
    s.publish_list(range(n))
    raise ValueError("the producer broke after %d items" % n)


@task(s=STREAM_OUT, returns=1)
def produce_until_consumed(s, n, marker):
    """Publishes ``n`` items, the last one once a consumer took one (``marker`` exists);
    True if it did before the deadline (producer and consumer ran at the same time)."""
    for i in range(n - 1):
        s.publish(i)
    deadline = time.time() + 60
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.01)
    s.publish(n - 1)
    return os.path.exists(marker)


@task(s=STREAM_OUT, returns=1)
def produce_then_hang(s, marker):
    """First attempt: three items, then hangs (its node is killed); a rerun returns."""
    if os.path.exists(marker):
        return "ran again"
    open(marker, "w").close()
    s.publish_list([0, 1, 2])
    time.sleep(120)


@task(s=STREAM_IN, returns=1)
def consume(s, marker=None):
    """Every item this consumer got, in order; ``marker``: touched at the first item."""
    got = []
    while not s.is_closed():
        items = s.poll(timeout=5)
        if items and marker and not got:
            open(marker, "w").close()
        got.extend(items)
    got.extend(s.poll())
    return got


@task(s=STREAM_IN, returns=1)
def consume_until_error(s):
    got = []
    try:
        while not s.is_closed():
            got.extend(s.poll(timeout=5))
    except Exception as exc:          # the producer's failure, after the items before it
        return got, type(exc).__name__, str(exc)
    return got, None, None


@task(s=STREAM_IN, returns=1)
def poll_twice_after_close(s):
    while not s.is_closed():
        s.poll(timeout=5)
    s.poll()
    s.poll()


@task(s=STREAM_OUT)
def publish_after_close(s):
    s.publish(1)
    s.close()
    s.publish(2)


@task(returns=1)
def plain(x):
    return x


@task(fs=STREAM_OUT)
def write_files(fs, n):
    # (written under a dot name, then renamed: the master's listing skips dot names, so a
    # file is never handed out between its truncation and its write, which a loaded
    # machine's listing caught once when the file was there from an earlier run)
    for i in range(n):
        tmp = os.path.join(fs.base_dir, ".f%03d.txt.part" % i)
        with open(tmp, "w") as f:
            f.write("item %d\n" % i)
        os.replace(tmp, os.path.join(fs.base_dir, "f%03d.txt" % i))


def _write_tagged(fs, prefix, n, tag):
    for i in range(n):      # (under a dot name, then renamed: as the docs say to)
        tmp = os.path.join(fs.base_dir, ".%s%03d.part" % (prefix, i))
        with open(tmp, "w") as f:
            f.write("%s %s %d\n" % (prefix, tag, i))
        os.replace(tmp, os.path.join(fs.base_dir, "%s%03d.txt" % (prefix, i)))
    return n


@task(fs=STREAM_OUT, returns=1)
def write_tagged(fs, prefix, n, tag):
    """Files PREFIX000.txt ... holding "PREFIX TAG i" (a rerun with another tag replaces
    the files an earlier run left); returns n."""
    return _write_tagged(fs, prefix, n, tag)


@task(fs=STREAM_OUT, mark=FILE_OUT)
def write_and_mark(fs, prefix, n, tag, mark):
    """write_tagged, then the file ``mark`` (what write_after waits for)."""
    _write_tagged(fs, prefix, n, tag)
    with open(mark, "w") as f:
        f.write("done\n")


@task(fs=STREAM_OUT, mark=FILE_IN)
def write_after(fs, prefix, n, tag, mark):
    """write_tagged, run once ``mark`` is written (a file: never sent ahead to the node of
    its writer, so the master sees the writer end before this one is dispatched)."""
    _write_tagged(fs, prefix, n, tag)


@task(fs=STREAM_IN, returns=1)
def read_files(fs):
    got = []
    while not fs.is_closed():
        for path in fs.poll(timeout=5):
            with open(path) as f:
                got.append(f.read().strip())
    return sorted(got)


@task(s=STREAM_OUT, returns=1)
def produce_where(s, n):
    import socket
    s.publish_list(range(n))
    return socket.gethostname()


@task(s=STREAM_IN, returns=1)
def consume_where(s):
    import socket
    got = []
    while not s.is_closed():
        got.extend(s.poll(timeout=5))
    return socket.gethostname(), got


@task(s=STREAM_IN, returns=1)
def take_then_hang(s, marker):
    """First attempt: takes three items, then hangs (its node is killed); a rerun polls."""
    if os.path.exists(marker):
        return s.poll(timeout=5)
    got = []
    while len(got) < 3:
        got.extend(s.poll(timeout=5))
    open(marker, "w").close()
    time.sleep(120)


def _await(path):
    deadline = time.time() + 60
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.01)


@task(s=STREAM_OUT)
def produce_in_two(s, n, k, gate):
    """Items 0..k-1, then (once ``gate`` exists) k..n-1."""
    s.publish_list(range(k))
    _await(gate)
    s.publish_list(range(k, n))


@task(s=STREAM_IN, returns=1)
def consume_first(s, gate):
    """The first items it gets (at least one), then touches ``gate`` and ends."""
    got = []
    while not got:
        got = s.poll(timeout=5)
    open(gate, "w").close()
    return got


@task(s=STREAM_IN, returns=1)
def consume_after(s, gate, tag):
    """Every item left once ``gate`` exists (``tag``: only its call's identity)."""
    _await(gate)
    got = []
    while not s.is_closed():
        got.extend(s.poll(timeout=5))
    got.extend(s.poll())
    return got


@task(returns=1)
def pipeline_in_a_task(n, alias, tag):
    """Makes a stream (``alias`` or none), calls its consumer and its producer as its
    children, returns what the consumer got (``tag``: only its call's identity)."""
    import taskflow
    from taskflow import wait_on
    s = taskflow.Stream(alias=alias)
    c = consume(s)
    produce(s, n)
    return wait_on(c)
