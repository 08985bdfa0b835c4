"""Where a crate goes: a directory, or one ``.zip`` file; an existing one only with force.

The crate is written beside its destination first (``.<name>.partial``) and
renamed into place, so a crate that failed half-way never looks whole.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

from ..errors import UsageError


def default_path(run_dir: str) -> str:
    """``<run dir>/crate``: where ``taskflow crate`` and ``--crate`` put it unless told."""
    return os.path.join(run_dir, "crate")


def refuse_existing(out: str, force: bool) -> None:
    """An error naming ``out`` when something is there and ``force`` is not given."""
    if os.path.lexists(out) and not force:
        raise UsageError(f"{out} exists: give another path with -o, or --force to replace it")


def write(crate: Any, out: str, force: bool = False) -> str:
    """Write ``crate`` (an ``ROCrate``) at ``out`` (``*.zip``: one zip file; else a
    directory); returns the absolute path."""
    out = os.path.abspath(out)
    refuse_existing(out, force)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    partial = os.path.join(parent, f".{os.path.basename(out)}.partial")
    _remove(partial)
    try:
        if out.endswith(".zip"):
            crate.write_zip(partial)
            if os.path.isfile(partial + ".zip"):       # (some versions add the suffix)
                os.replace(partial + ".zip", partial)
        else:
            crate.write(partial)
        _remove(out)
        os.replace(partial, out)
    finally:
        _remove(partial)
    return out


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
