"""PyCOMPSs's warning for a decorator argument it does not know (the argument is ignored)."""
from __future__ import annotations

import difflib
import logging
import sys

log = logging.getLogger("taskflow.compat")


def unexpected(key: str, deco: str, known: tuple[str, ...] = ()) -> None:
    """``WARNING: Unexpected argument: KEY Found in @DECO decorator.`` on stderr, as
    PyCOMPSs prints it, and taskflow's "did you mean" when a known one is close."""
    print(f"WARNING: Unexpected argument: {key} Found in @{deco} decorator.", file=sys.stderr)
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        log.warning("@%s: %s= is ignored; did you mean %s=?", deco, key, close[0])
