"""The resume log's frames on disk, whatever way their values were written: joined into
one buffer (a frame's values under ``JOIN_MAX`` bytes), or handed to ``writev`` as they
are, ``IOV_MAX`` at a time. A reader finds every frame intact and every value whole,
in its record's order."""
from __future__ import annotations

import pickle
import zlib

import pytest

from taskflow.runtime.recovery.frames import MAGIC, read_frames
from taskflow.runtime.recovery.log import IOV_MAX, JOIN_MAX, ResumeLog


def _values(n: int, size: int, seed: int) -> list[bytes]:
    return [bytes([(seed + i) % 256]) * size + i.to_bytes(4, "big") for i in range(n)]


@pytest.mark.parametrize("n, size", [
    (20, 100),                              # small: one buffer
    (300, 10_000),                          # 3 MB of 10 KB values: writev
    (IOV_MAX + 200, JOIN_MAX // 900),       # more parts than one writev takes
])
def test_every_value_of_a_frame_is_read_back_whole_and_in_order(tmp_path, n, size):
    path = str(tmp_path / "resume.log")
    log = ResumeLog(path)       # (it starts the file: MAGIC, then the run's origin)
    batches = [_values(n, size, seed) for seed in (1, 2)]
    for vals in batches:
        records = [(0, i + 1, (i,), len(v), zlib.crc32(v)) for i, v in enumerate(vals)]
        log.add(records, list(vals))
    log.close()
    with open(path, "rb") as f:
        data = f.read()
        f.seek(0)
        damages: list = []
        frames = list(read_frames(f, len(data), damages))
    assert data.startswith(MAGIC) and damages == [] and len(frames) == 3
    for frame, vals in zip(frames[1:], batches):
        _, records = pickle.loads(frame.header)
        pos = frame.body
        for rec, v in zip(records, vals):
            got = data[pos:pos + rec[3]]
            assert got == v and zlib.crc32(got) == rec[4]
            pos += rec[3]
        assert pos == frame.end
