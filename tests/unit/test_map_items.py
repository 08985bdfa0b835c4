"""taskflow map's sources, placeholders and checks, without a run (taskflow.farm)."""
from __future__ import annotations

import pytest

from taskflow.errors import UsageError
from taskflow.farm import items as I
from taskflow.farm.placeholders import compile_template
from taskflow.farm.sources import LinesSource, RangeSource, product


def test_placeholders_as_gnu_parallel_writes_them():
    t = compile_template("{} {.} {/} {//} {/.} {#} {{x}} awk{print $1}", "t",
                         [RangeSource("1")])
    assert t.fill(7, ("dir/sub/a.tar.gz",)) == \
        "dir/sub/a.tar.gz dir/sub/a.tar a.tar.gz dir/sub a.tar 7 {x} " \
        "awk{print $1}"


def test_sources_lazily_and_their_cross_product(tmp_path):
    assert list(RangeSource("1-3,10-14:2,20").values()) == [1, 2, 3, 10, 12, 14, 20]
    f = tmp_path / "l.txt"
    f.write_bytes(b"a\r\n\nlast")           # CRLF, an empty line, no final newline
    lines = LinesSource(str(f))
    assert len(lines) == 3 and list(lines.values()) == ["a", "", "last"]
    assert list(product([RangeSource("1-2"), lines])) == [
        (1, "a"), (1, ""), (1, "last"), (2, "a"), (2, ""), (2, "last")]


def test_collisions_found_across_partitions(monkeypatch):
    monkeypatch.setattr(I, "CHECK_PARTITION", 7)       # 100 paths: 15 passes
    plan = I.plan_items(["cp", "x", "o{}"], [RangeSource("1-100")], (), ["o{}"], None, None)
    I.check_items(plan)                                 # all distinct: fine
    plan = I.plan_items(["cp", "x", "o{=}"], [RangeSource("1-100")], (), ["o{=}"], None,
                        None)                           # (not a placeholder: one file)
    with pytest.raises(UsageError, match="items 1 and 2 would both write"):
        I.check_items(plan)


def test_file_arguments_become_parameters_with_their_prefix():
    plan = I.plan_items(["prog", "-v", "--in={}", "--output={.}.out", "x y"],
                        [RangeSource("1-2")], ["{}"], ["{.}.out"], None, None)
    assert plan.args == "-v {{in0}} {{out0}} {{w4}}"
    assert plan.names == ["TASKFLOW_INDEX", "TASKFLOW_ITEM", "w4", "in0", "out0"]
    assert plan.arguments(2, (2,)) == ("2", "2", "x y", "2", "2.out")


def test_a_command_without_arguments_gets_none():
    """(@binary without args would append the parameters: TASKFLOW_INDEX, ... on argv)"""
    from taskflow.farm.task import map_task
    plan = I.plan_items(["pwd"], [RangeSource("1-2")], (), (), None, None)
    fn = map_task(plan, None, None, None, None, None)
    assert fn.spec.program.line.args == "" and fn.spec.program.line.env == I.ENV
