"""Gang placement in whole groups (PyCOMPSs's computing nodes of an @mpi with
processes_per_node): several groups share a node with room; a group never splits."""
from __future__ import annotations

from types import SimpleNamespace

from taskflow.runtime.scheduling.gang import describe, place
from taskflow.wire.invocation import Gang


def _node(name: str, slots: int, used: int = 0) -> SimpleNamespace:
    return SimpleNamespace(name=name, usable=True, slots=slots, used=used, gpus=0, info={},
                           io_slots=0, io_used=0)


def test_groups_share_a_node_with_room():
    a, b = _node("a", 4), _node("b", 4)
    got = place([a, b], Gang(8, None, 1, 0, 2))
    assert sorted((n.name, k) for n, k in got) == [("a", 4), ("b", 4)]
    assert place([a, b], Gang(8, 2, 1)) is None          # strict: 2 per node needs 4 nodes
    assert [(n.name, k) for n, k in place([a], Gang(4, None, 1, 0, 2))] == [("a", 4)]


def test_a_group_never_splits_over_nodes():
    a, b = _node("a", 3), _node("b", 3)
    assert place([a, b], Gang(6, None, 1)) is not None    # packed processes fit 3 + 3
    assert place([a, b], Gang(6, None, 1, 0, 2), free=False) is None   # groups: 1 + 1 only
    got = place([a, b], Gang(4, None, 1, 0, 2))
    assert sorted(k for _, k in got) == [2, 2]
    assert "groups of 2" in describe(Gang(6, None, 1, 0, 2))
