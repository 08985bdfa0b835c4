"""Markdown table of medians, with taskflow / peer ratio rows."""
from __future__ import annotations

from typing import Any

from benchmarks.workloads import COLUMNS, D_SLOTS


def fmt_value(metric: str, v: float) -> str:
    if metric == "tasks_per_s":
        return f"{v / 1e6:.1f} M" if v >= 1e6 else f"{v:,.0f}"
    if metric == "us_per_task":
        return f"{v:.2f}" if v < 10 else f"{v:,.0f}"
    if metric == "bytes_per_task":
        return f"{v:,.0f}"
    if metric.endswith("_s") or metric == "seconds":
        return f"{v:.2g}" if v < 0.01 else f"{v:.3f}" if v < 0.1 else f"{v:.2f}"
    return f"{v:.2f}"


def fmt_ratio(r: float) -> str:
    if r >= 100:
        return f"{r:,.0f}"
    if r >= 0.1:
        return f"{r:.2f}"
    return f"{r:.2g}"


def _cell(name: str, key: str, metric: str, med: dict, samples: dict) -> str:
    runs = samples.get(name, {}).get(key, [])
    if not runs:
        return "—"
    v = med.get(name, {}).get(key, {}).get(metric)
    if v is None:
        return "error"
    errors = sum(1 for r in runs if "error" in r)
    return fmt_value(metric, v) + (f" ({errors} failed)" if errors else "")


def markdown_table(
    names: list[str],
    keys: list[str],
    med: dict[str, dict[str, dict[str, float]]],
    samples: dict[str, dict[str, list[dict[str, Any]]]],
    labels: dict[str, str],
    workers: int,
) -> str:
    """Rows: runtimes then ratios; columns: the selected workloads' metrics."""
    cols = [c for c in COLUMNS if c[0] in keys]
    head = ["runtime (W)"] + [f"{h} {'↑' if hib else '↓'}" for _, _, h, hib in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        w = "1" if n == "seq" else f"{workers}; D: {D_SLOTS}"
        row = [f"{labels.get(n, n)} ({w})"] + [_cell(n, k, m, med, samples) for k, m, _, _ in cols]
        lines.append("| " + " | ".join(row) + " |")
    if "taskflow" in names:
        tf = med.get("taskflow", {})
        for n in names:
            if n == "taskflow":
                continue
            row = [f"**taskflow / {labels.get(n, n)}**"]
            for k, m, _, hib in cols:
                a, b = tf.get(k, {}).get(m), med.get(n, {}).get(k, {}).get(m)
                if a is None or b is None or b == 0:
                    row.append("—")
                    continue
                r = a / b
                better = r > 1 if hib else r < 1
                verdict = "about even" if 0.95 < r < 1 / 0.95 else "taskflow better" if better else "peer better"
                row.append(f"{fmt_ratio(r)} ({verdict})")
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(
        "↑ higher is better, ↓ lower is better. Ratio rows are taskflow's median ÷ the peer's "
        "median in the same column: for tasks/s columns that is taskflow throughput / peer "
        "throughput (> 1: taskflow better); for every other column it is taskflow latency "
        "(or cost) / peer latency (< 1: taskflow better). "
        "Within 5% of 1 a cell says \"about even\": that is inside this machine's noise."
    )
    if "taskflow" not in names:
        lines.append("taskflow did not run, so there are no ratio rows.")
    return "\n".join(lines)
