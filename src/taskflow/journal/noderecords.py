"""What a run's journal says of its nodes: joins and losses, load samples, memory reports,
and the values that moved between them (:class:`~.reader.Journal` reads them through this)."""
from __future__ import annotations

import json
from typing import Any, Iterator

from .dbfile import JournalFile


class NodeRecords(JournalFile):
    """The nodes' tables of a journal."""

    def nodes(self) -> list[dict[str, Any]]:
        out = self._all("SELECT name, t_join, t_lost, slots, info, reason FROM nodes ORDER BY rowid")
        for n in out:
            try:
                n["info"] = json.loads(n["info"] or "{}")
            except ValueError:
                n["info"] = {}
        return out

    def samples_since(self, rowid: int = 0, limit: int = 5000) -> list[dict[str, Any]]:
        """Samples stored after row ``rowid`` (``rowid`` in each), with GPU use when known."""
        out = self._all("SELECT rowid, node, t, cpu, mem, load1, data FROM samples WHERE rowid>? "
                        f"ORDER BY rowid LIMIT {int(limit)}", (rowid,))
        for s in out:
            data = s.pop("data", None)
            try:
                gpu = json.loads(data or "{}").get("gpu")
            except (ValueError, AttributeError):
                gpu = None
            s["gpu"] = sum(gpu) / len(gpu) if isinstance(gpu, list) and gpu else None
        return out

    def samples(self, node: str | None = None, after: float = 0.0) -> list[dict[str, Any]]:
        sql = "SELECT node, t, cpu, mem, load1 FROM samples WHERE t>?"
        args: tuple[Any, ...] = (after,)
        if node:
            sql += " AND node=?"
            args = (after, node)
        return self._all(sql + " ORDER BY t", args)


    def latest_samples(self) -> dict[str, dict[str, Any]]:
        """Each node's last load sample (cpu, mem, load1 and the rest: disk, net, gpu)."""
        out: dict[str, dict[str, Any]] = {}
        for r in self._all("SELECT node, t, cpu, mem, load1, data FROM samples WHERE rowid IN "
                           "(SELECT MAX(rowid) FROM samples GROUP BY node)"):
            try:
                extra = json.loads(r.pop("data") or "{}")
            except ValueError:
                extra = {}
            out[r["node"]] = {**(extra if isinstance(extra, dict) else {}), **r}
        return out

    def memory(self, node: str | None = None) -> list[dict[str, Any]]:
        """The nodes' memory reports (spills, read-backs, pauses), oldest first."""
        if node:
            return self._all("SELECT * FROM memory WHERE node=? ORDER BY t", (node,))
        return self._all("SELECT * FROM memory ORDER BY t")

    def moves(self, task: int | None = None) -> list[dict[str, Any]]:
        """Values over the inline limit that moved (to the master, between nodes), in the
        order they arrived; ``task``: those made by it or moved for it."""
        sql = "SELECT task_id, producer, t_start, t_end, bytes, src, dst FROM moves"
        args: tuple[Any, ...] = ()
        if task is not None:
            sql += " WHERE task_id=? OR producer=?"
            args = (task, task)
        return self._all(sql + " ORDER BY t_end", args)     # (none: a journal from before)

    def moved(self) -> dict[str, tuple[int, int, float]]:
        """Totals of the moves: "to the master" and "between nodes" -> (values, bytes,
        seconds spent moving them, added up)."""
        rows = self._rows("SELECT dst = 'master', COUNT(*), SUM(bytes), "
                          "SUM(t_end - t_start) FROM moves GROUP BY dst = 'master'")
        return {("to the master" if master else "between nodes"): (n, b or 0, s or 0.0)
                for master, n, b, s in rows}

    def each_memory(self) -> Iterator[dict[str, Any]]:
        """:meth:`memory`, streamed."""
        for r in self._each("SELECT * FROM memory ORDER BY t"):
            yield dict(r)
