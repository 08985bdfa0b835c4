"""``pycompss.dds``: PyCOMPSs's Distributed Data Set, over the PyCOMPSs API only.

A :class:`DDS` is a list of partitions, each a future of a list; every
operation is one task per partition (or a tree of tasks for reductions), so
the library runs on taskflow as it runs on PyCOMPSs.
"""
from .dds import DDS

__all__ = ["DDS"]
