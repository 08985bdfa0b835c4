"""``pycompss.runtime.management.object_tracker.OT``: which objects the runtime follows.

A read-only view of the layer's registry, under PyCOMPSs's names:
``OT.get_object_id(obj)`` / ``OT.is_tracked(obj)`` give the object's
identifier (``"<run id>-<data id>"``) while a task's version of it is pending
(an object passed INOUT, a stand-in ``returns=Class`` object, a future a
task call gave), else ``""``, as PyCOMPSs gives (applications compare with
``== ""``); ``OT.pending_to_synchronize`` is the set of
those identifiers; ``OT.is_obj_pending_to_synchronize(obj)`` says whether
``obj`` is among them. The view changes nothing: the runtime's own waiting
(``compss_wait_on``, ``compss_delete_object``) does.
"""
from __future__ import annotations

from typing import Any

from .....future import Future
from .....runtime import current


class ObjectTrackerView:
    """The read-only object tracker (see the module docstring)."""

    __slots__ = ()

    @staticmethod
    def _prefix() -> str:
        rt = current.get()
        return getattr(rt, "run_id", None) or "run"

    def get_object_id(self, obj: Any) -> str:
        """The identifier of a followed object, else ``""``."""
        rt = current.get()
        if rt is None:
            return ""
        if isinstance(obj, Future):
            return f"{self._prefix()}-{obj._did}"
        item = rt.registry.object_item(obj)
        if item is None or item.obj is not obj:
            return ""
        return f"{self._prefix()}-{item.latest._did}"

    def is_tracked(self, obj: Any) -> str:
        return self.get_object_id(obj)

    def is_obj_pending_to_synchronize(self, obj: Any) -> bool:
        return self.get_object_id(obj) != ""

    @property
    def pending_to_synchronize(self) -> frozenset[str]:
        """The identifiers of every object a task's version of is pending."""
        rt = current.get()
        if rt is None:
            return frozenset()
        prefix = self._prefix()
        return frozenset(f"{prefix}-{item.latest._did}"
                         for item in list(rt.registry.objects.values()))

    def __repr__(self) -> str:
        return f"<object tracker: {len(self.pending_to_synchronize)} object(s) pending>"


OT = ObjectTrackerView()


def OT_is_tracked(obj: Any) -> str:  # noqa: N802 - PyCOMPSs's older name
    return OT.is_tracked(obj)


__all__ = ["OT", "ObjectTrackerView", "OT_is_tracked"]
