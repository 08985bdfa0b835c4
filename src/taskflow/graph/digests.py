"""Digests of what a call's resume key depends on besides its arguments: the code of its
function and the contents of its files and directories (graph.keys makes the keys)."""
from __future__ import annotations

import inspect
import os
import types
from typing import Any

try:    # hashlib's own BLAKE2 (hashlib.blake2b is this), without loading hashlib: its import
    from _blake2 import blake2b as blake2b  # loads OpenSSL, ~2.5 ms of a master's start
except ImportError:                 # pragma: no cover - (a Python built without it)
    from hashlib import blake2b as blake2b

_H = blake2b
SIZE = 16               # bytes of every digest and key


def code_digest(func: Any, seen: dict[int, bytes]) -> bytes:
    """A function's code as a digest: its source (else its byte code), and the code of the
    functions of its own module it names (``seen``: the ones taken already: a cycle counts
    once)."""
    func = getattr(func, "__wrapped__", func)
    if id(func) in seen:
        return seen[id(func)]
    seen[id(func)] = b""                    # a cycle: counted once
    h = _H(digest_size=SIZE)
    code = getattr(func, "__code__", None)
    try:
        h.update(inspect.getsource(func).encode())
    except (OSError, TypeError):
        if code is not None:
            h.update(_bytecode(code))
        else:
            h.update(repr(func).encode())
    if code is not None:
        module = getattr(func, "__module__", None)
        g = getattr(func, "__globals__", {})
        for name in sorted(_names(code)):
            obj = g.get(name)
            inner = getattr(obj, "__wrapped__", obj)
            if isinstance(inner, types.FunctionType) and inner.__module__ == module \
                    and inner is not func:
                h.update(name.encode())
                h.update(code_digest(inner, seen))
    d = h.digest()
    seen[id(func)] = d
    return d


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _bytecode(code: types.CodeType) -> bytes:
    parts = [code.co_code]
    for c in code.co_consts:
        parts.append(_bytecode(c) if isinstance(c, types.CodeType) else repr(c).encode())
    return b"".join(parts)


def file_digest(path: str, size: int = -1) -> bytes:
    """A file's content as a digest (read in 1 MiB parts; unreadable: its path said so).

    ``size``: what a ``stat`` of it just said, when the caller made one: a small file
    is then read in one call (open, read, close; ``open()``'s buffered file adds an
    ``fstat``, an ``ioctl``, an ``lseek`` and a read of its end)."""
    h = _H(digest_size=SIZE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        h.update(b"unreadable:" + path.encode())
        return h.digest()
    try:
        want = size + 1 if 0 <= size < _CHUNK else _CHUNK
        total = 0
        while True:
            chunk = os.read(fd, want)
            if not chunk:
                break
            h.update(chunk)
            total += len(chunk)
            if total == size and len(chunk) < want:
                break       # all the stat said, and a short read: its end
            want = _CHUNK
    except OSError:
        h.update(b"unreadable:" + path.encode())
    finally:
        os.close(fd)
    return h.digest()


_CHUNK = 1 << 20


def dir_digest(path: str) -> bytes:
    """A directory's files (names and contents, in a fixed order) as one digest."""
    h = _H(digest_size=SIZE)
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            h.update(os.path.relpath(p, path).encode() + b"\0")
            h.update(file_digest(p))
    return h.digest()
