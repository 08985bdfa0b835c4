"""The "did you mean" of a misspelt keyword: the closest known word (difflib), if any."""
from __future__ import annotations

from typing import Iterable


def close_match(word: str, choices: Iterable[str]) -> str | None:
    """The known word ``word`` most likely misspells (difflib's ratio >= 0.6), or None."""
    import difflib      # (here: a program that misspells nothing never loads it)
    close = difflib.get_close_matches(word, list(choices), n=1)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` Did you mean 'returns'?`` for a close match, else ``""``."""
    close = close_match(word, choices)
    return f" Did you mean '{close}'?" if close else ""
