"""The lines a resumed run (and explain, the report, a plan) prints per task name."""
from __future__ import annotations

from taskflow.graph.keys import KeyParts
from taskflow.runtime.recovery.reasons import summary_lines, why_again


def test_a_line_per_name_counts_reasons_and_names_the_files():
    changed = "input file changed (content, parameter reads)"
    reruns = {"align": {f"{changed}: /d/s{i}.fq": 1 for i in (3, 1, 7, 9)},
              "merge": {"its code changed": 1, "an upstream task changed (parameter x)": 2},
              "index": {"no earlier result (it did not finish)": 0}}
    lines = summary_lines({"align": 96, "index": 5, "fetch": 3}, reruns)
    assert lines == [
        f"reused 96 of 100 calls of align; 4 ran: 4 {changed}: /d/s1.fq, /d/s3.fq, /d/s7.fq "
        f"and 1 more; 0 ran because its code changed",
        "reused 3 of 3 calls of fetch; none ran again",
        "reused 5 of 5 calls of index; none ran again",
        "reused 0 of 3 calls of merge; 3 ran: 2 an upstream task changed (parameter x); "
        "1 its code changed"]


def test_the_reason_is_the_first_piece_of_the_key_that_differs():
    old = KeyParts(b"c1", (("src", "file", b"a"), ("n", "task", b"k")))
    assert why_again(old, KeyParts(b"c2", old.inputs), False) == "its code changed"
    new = KeyParts(b"c1", (("src", "file", b"b"), ("n", "task", b"k")))
    assert why_again(old, new, False, {"src": "/x/in.txt"}, "mtime") == \
        "input file changed (mtime, parameter src): /x/in.txt"
    new = KeyParts(b"c1", (("src", "file", b"a"), ("n", "task", b"j")))
    assert why_again(old, new, False) == "an upstream task changed (parameter n)"
    assert why_again(None, new, True) == "it failed in the earlier run"
    assert why_again(None, new, False) == "no earlier result (it did not finish)"
