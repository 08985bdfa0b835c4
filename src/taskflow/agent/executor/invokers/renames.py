"""PyCOMPSs's ``Keep_rename=True``: the task sees its files under the runtime's names.

COMPSs names every file version ``d<id>v<version>_<stamp>.IT``; a parameter
declared with ``Keep_rename=True`` reaches the task under such a name (each
file of a ``COLLECTION_FILE`` too), without it under a name like the
original (taskflow keeps a version's base name). The renamed files are
symbolic links in a directory of their own, made before the call and removed
after it; what the task writes through one lands in the version it stands for.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
import time
from typing import Any

from . import command

# a version's folder in the run's store: its own (d<data id>v<n>) or its user folder's (f<k>v<n>)
_VERSION = re.compile(r"^(?:d(\d+)|f\d+)v(\d+)$")
_SEQ = itertools.count(1)


def version_name(path: str) -> str:
    """COMPSs's name of the version at ``path``: ``d<id>v<version>_<stamp>.IT``."""
    m = _VERSION.match(os.path.basename(os.path.dirname(path)))
    did, version = (m.group(1), m.group(2)) if m else (None, "1")
    if did is None:         # the program's own file (the first version), or a version in its
        try:                # folder's: its inode names it
            did = str(os.stat(path).st_ino)
        except OSError:
            did = str(next(_SEQ))
    return f"d{did}v{version}_{int(time.time() * 1000)}.IT"


def rename(names: tuple[str, ...], func: Any, args: list[Any], kw: dict[str, Any]
           ) -> tuple[list[Any], dict[str, Any], str]:
    """``args``/``kw`` with the files of the parameters ``names`` behind their COMPSs names
    (links in a new directory, returned for :func:`cleanup`)."""
    d = tempfile.mkdtemp(prefix="taskflow-rename-")
    params = list(command._signature(func).parameters)
    args, kw = list(args), dict(kw)

    def link(path: Any) -> Any:
        if isinstance(path, (list, tuple)):
            return type(path)(link(p) for p in path)
        if not isinstance(path, (str, os.PathLike)):
            return path
        target = os.path.abspath(os.fspath(path))
        new = os.path.join(d, version_name(target))
        os.symlink(target, new)
        return new
    for name in names:
        pos = params.index(name) if name in params else None
        if name in kw:
            kw[name] = link(kw[name])
        elif pos is not None and pos < len(args):
            args[pos] = link(args[pos])
    return args, kw, d


def cleanup(d: str) -> None:
    shutil.rmtree(d, ignore_errors=True)
