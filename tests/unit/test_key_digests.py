"""What a call's resume key reads of its files and arguments (graph/digests.py,
graph/expr.py): the same bytes and names however they are read."""
from __future__ import annotations

import hashlib
import inspect
import os

from taskflow.graph.digests import SIZE, file_digest
from taskflow.graph.expr import bind
from taskflow.graph.spec import TaskSpec


def _whole(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=SIZE).digest()


def test_a_file_digest_is_its_content_whatever_the_stat_said(tmp_path):
    for n in (0, 1, 100, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 7):
        p = tmp_path / f"f{n}"
        data = os.urandom(n)
        p.write_bytes(data)
        size = os.stat(p).st_size
        # the size just seen, none, or one the file no longer has (it changed since)
        for said in (size, -1, size + 5, max(0, size - 1)):
            assert file_digest(str(p), said) == _whole(data), (n, said)


def test_an_unreadable_file_is_named_by_its_path(tmp_path):
    missing = str(tmp_path / "nope")
    want = hashlib.blake2b(b"unreadable:" + missing.encode(), digest_size=SIZE).digest()
    assert file_digest(missing) == want == file_digest(missing, 10)
    folder = str(tmp_path)
    assert file_digest(folder) == \
        hashlib.blake2b(b"unreadable:" + folder.encode(), digest_size=SIZE).digest()


def test_binding_a_call_is_what_the_signature_binds():
    def f1(a, b=2): pass
    def f2(a, /, b): pass
    def f3(a, *rest): pass
    def f4(a, *, k=1): pass
    def f5(a, **kw): pass
    for f, args, kw in [(f1, (1, 5), {}), (f1, (1,), {}), (f1, (1,), {"b": 3}), (f2, (1, 2), {}),
                        (f3, (1,), {}), (f3, (1, 2, 3), {}), (f4, (1,), {}), (f5, (1,), {})]:
        b = inspect.signature(f).bind_partial(*args, **kw)
        b.apply_defaults()
        got = bind(TaskSpec(f, {}, None, 0, None, "RETRY", None), args, kw)
        assert got == dict(b.arguments) and list(got) == list(b.arguments), f.__name__
