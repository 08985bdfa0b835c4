"""A damaged resume.log is never restored: every damage is said, or harmless.

One real run writes a small resume.log (plain calls, keyed calls, a large value
kept out of band, a file); copies of it with one bit flipped (5,000 of them) or
16 bytes overwritten are read back through the resumed run's reader
(runtime/recovery/restore.py: the records at open, each value as its call would be
restored). None may give a record or a value that the intact log does not have. A
real resume of a log with a flipped value reruns that call and says so."""
from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from taskflow.runtime.recovery.frames import MAGIC, read_frames
from taskflow.runtime.recovery.restore import Resumer, ResumeStore, ValueDamaged

WF = textwrap.dedent('''
    import time
    from taskflow import task, wait_on, FILE_OUT
    @task(returns=int)
    def step(i):
        with open("ran.log", "a") as f:
            f.write(f"{i}\\n")
        return i * 100 + 24
    @task(returns=int)
    def combine(a, b, scale=1):
        return (a + b) * scale
    @task(returns=bytes)
    def big(n):
        return bytes(range(256)) * (n // 256)
    @task(out=FILE_OUT)
    def write(out, text):
        with open(out, "w") as f:
            f.write(text)
    first = wait_on([step(i) for i in range(4)])
    time.sleep(0.3)                         # (later records in frames of their own)
    c = combine(step(10), step(11), scale=2)
    b = big(65536)
    write("out.txt", "hello")
    print(sum(first), wait_on(c), len(wait_on(b)))
''')


def _tf(cwd, *args):
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _only_run(root):
    (rid,) = os.listdir(root)
    return os.path.join(root, rid)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A real run's directory and its resume.log's bytes."""
    where = tmp_path_factory.mktemp("written")
    (where / "wf.py").write_text(WF)
    r = _tf(where, "run", "--no-progress", "--run-dir", str(where / "runs"), "wf.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["696", "4296", "65536"]
    run = _only_run(where / "runs")
    with open(os.path.join(run, "resume.log"), "rb") as f:
        return where, run, f.read()


def _read(run_dir):
    """What a resumed run would restore from ``run_dir``: {key: (record without where
    its values were, values)}, and whether a damage was said."""
    store = ResumeStore(run_dir)
    said = store.damaged is not None
    resumer = Resumer(store, set())
    out = {}
    for key, rec in store.by_key.items():
        rec, _ = resumer.find(key, rec.name, rec.ordinal, rec.parts)
        if rec is None:
            continue                # (a value that stayed on its node, never fetched)
        try:
            values = store.values(rec)
        except ValueDamaged:
            said = True
            continue
        outs = tuple(o[:2] + o[3:] if o[0] in ("v", "V") else o for o in rec.outputs)
        out[key] = ((rec.name, rec.ordinal, rec.parts, outs), values)
    return out, said


def _check(damaged_dir, data, intact):
    """The damaged ``data`` read back: nothing differs from ``intact``; True if the damage
    was said or changed nothing."""
    path = os.path.join(damaged_dir, "resume.log")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:                                # (in place: same length, no truncation)
        os.pwrite(fd, data, 0)
    finally:
        os.close(fd)
    got, said = _read(damaged_dir)
    for key, restored in got.items():
        assert key in intact, "a record the intact log does not have"
        assert restored == intact[key], "a record or value that differs from the intact log"
    return said or got == intact


def test_the_intact_log_has_every_kind_of_record(written):
    _, run, data = written
    intact, said = _read(run)
    assert not said
    kinds = {o[0] for (_, _, _, outs), _ in intact.values() for o in outs}
    assert {"v", "V", "f"} <= kinds and len(intact) == 9
    assert data.startswith(MAGIC)


def test_5000_single_bit_flips_restore_no_wrong_value(written, tmp_path):
    _, run, data = written
    intact, _ = _read(run)
    # the large value is 98 % of the file: most flips go to the rest (heads, records,
    # small values), 500 to it
    (rec,) = [r for r in ResumeStore(run).by_key.values() if r.name == "big"]
    _, n, offset, _ = rec.outputs[0]
    inside = range(offset * 8, (offset + n) * 8)
    outside = [b for b in range(len(data) * 8) if b not in inside]
    rng = random.Random(43)
    chosen = rng.sample(outside, min(4500, len(outside)))
    chosen += rng.sample(inside, 5000 - len(chosen))
    for bit in chosen:
        copy = bytearray(data)
        copy[bit // 8] ^= 1 << (bit % 8)
        assert _check(tmp_path, bytes(copy), intact), \
            f"bit {bit} (byte {bit // 8}): a damage neither said nor harmless"


def test_16_byte_overwrites_are_said_and_reading_goes_on_after_them(written, tmp_path):
    _, run, data = written
    intact, _ = _read(run)
    rng = random.Random(16)
    for _ in range(200):
        at = rng.randrange(0, len(data) - 16)
        copy = bytearray(data)
        copy[at:at + 16] = rng.randbytes(16)
        assert _check(tmp_path, bytes(copy), intact), f"16 bytes at {at}"
    # a damaged head of the frame of the first calls' records (the origin's frame is
    # first; the calls after the sleep are in later frames): the frames after it are read
    with open(os.path.join(run, "resume.log"), "rb") as f:
        frames = list(read_frames(f, len(data), []))
    assert len(frames) >= 3
    middle = frames[1]
    copy = bytearray(data)
    copy[middle.pos + 6] ^= 0xFF            # its header length
    store_dir = tmp_path / "head"
    store_dir.mkdir()
    (store_dir / "resume.log").write_bytes(bytes(copy))
    store = ResumeStore(str(store_dir))
    assert store.damaged is not None
    assert f"is damaged at byte {middle.pos} (a frame's head does not match its checksum)" \
        in store.damaged
    assert f"reading went on at the next intact frame (byte {middle.end})" in store.damaged
    assert 0 < len(store) < len(intact)


def test_a_flipped_value_is_said_and_its_call_runs_again_with_the_right_value(written,
                                                                            tmp_path):
    where, run, data = written
    store = ResumeStore(run)
    (rec,) = [r for r in store.by_key.values() if r.name == "step" and r.ordinal == 3]
    kind, n, offset, _ = rec.outputs[0]
    assert kind == "v"
    copy = bytearray(data)
    copy[offset + n - 2] ^= 0x01            # 224 -> 225, or close: a wrong number
    (where / "resume.log.bak").write_bytes(data)
    with open(os.path.join(run, "resume.log"), "wb") as f:
        f.write(bytes(copy))
    try:
        os.unlink(where / "ran.log")
        r = _tf(where, "run", "--no-progress", "--run-dir", str(where / "runs"), "--resume",
                "wf.py")
    finally:
        with open(os.path.join(run, "resume.log"), "wb") as f:
            f.write(data)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["696", "4296", "65536"]         # the right value
    said = [ln for ln in r.stderr.splitlines() if f"is damaged at byte {offset}" in ln]
    assert len(said) == 1 and "finished step call" in said[0] and "runs again" in said[0]
    assert (where / "ran.log").read_text().split() == ["2"]     # that call only
    resumed = [d for d in os.listdir(where / "runs") if os.path.join(where / "runs", d) != run]
    (rid,) = resumed
    db = sqlite3.connect(where / "runs" / rid / "journal.db")
    lines = [ln for (ln,) in db.execute("SELECT line FROM logs WHERE level='TASKFLOW'")]
    assert any(f"is damaged at byte {offset}" in ln for ln in lines)
    why = db.execute("SELECT info FROM transitions WHERE state='RERUN'").fetchall()
    assert why == [("its record in the earlier run's resume log is damaged",)]
