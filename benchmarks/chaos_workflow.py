"""The chaos driver's workflow (benchmarks/chaos.py): every value and file it makes is known.

Run by ``taskflow run`` as a real process::

    CHAOS_LEDGER=/abs/ledger taskflow run benchmarks/chaos_workflow.py TASKS OUT_DIR

It submits about TASKS tasks in a fixed order (:func:`plan`): Python chains
(each step takes the one before), fan-ins (a total per group of chain ends, a
sum per block of a few hundred independent squares, one grand total),
FILE_OUT -> FILE_IN pairs, and ``@binary`` tasks (``sh`` writing a file line
by line and exiting with a computed code) read by a Python task. Every task
appends ``s <identity>`` to the ledger when it starts and ``e <identity>`` when
it ends (one ``write`` to a file opened with O_APPEND: lines never
interleave), so the driver counts executions per task. At the end the script
writes ``OUT_DIR/results.json`` ({identity: value}); the files are at
``OUT_DIR/pairs/`` and ``OUT_DIR/bins/``. :func:`expected_values` and
:func:`expected_file` give what they must be.

Tasks are short but not no-ops (:func:`mix` is a few hundred multiply-adds, the
binaries fork ``sh``), so kills land while tasks run.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Iterator, NamedTuple

from taskflow import FILE_IN, FILE_OUT, binary, task, wait_on

M = 1_000_000_007
CHAIN_LEN = 20
GROUP = 10            # chain ends per group total
BLOCK = 250           # squares per block sum
PAIR_LINES = 8
BIN_LINES = 6
LEDGER = os.environ.get("CHAOS_LEDGER", os.path.abspath("chaos-ledger.txt"))
NAP = float(os.environ.get("CHAOS_NAP", "0.002"))    # s a Python task also sleeps


# -- the arithmetic (the driver calls the same functions) -----------------------------
def mix(x: int, y: int, rounds: int = 300) -> int:
    """A deterministic few-hundred-step mix of two ints."""
    h = (x * 1_000_003 + y) % M
    for r in range(rounds):
        h = (h * 48271 + r + y) % M
    return h


def pair_text(k: int) -> str:
    return "".join(f"{k} {j} {mix(k, j, 20)}\n" for j in range(PAIR_LINES))


def bin_text(k: int) -> str:
    # what the shell script below writes (its arithmetic, in Python)
    return "".join(f"{k} {i} {(k * 7919 + i * 104729) % 1000003}\n" for i in range(BIN_LINES))


def text_value(text: str) -> int:
    """What a reader returns for a file's text: the sum of its third column, mod M."""
    return sum(int(line.split()[2]) for line in text.splitlines()) % M


# -- the tasks -------------------------------------------------------------------------
def _mark(what: str) -> None:
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (what + "\n").encode())
    finally:
        os.close(fd)


@task(returns=int)
def step(c: int, i: int, prev: int) -> int:
    _mark(f"s step {c} {i}")
    v = mix(prev, c * 1000 + i)
    time.sleep(NAP)
    _mark(f"e step {c} {i}")
    return v


@task(returns=int)
def group_total(g: int, ends: list[int]) -> int:
    _mark(f"s group {g}")
    v = sum(ends) % M
    _mark(f"e group {g}")
    return v


@task(returns=int)
def square(k: int) -> int:
    _mark(f"s sq {k}")
    v = mix(k, k)
    time.sleep(NAP)
    _mark(f"e sq {k}")
    return v


@task(returns=int)
def block_sum(b: int, values: list[int]) -> int:
    _mark(f"s block {b}")
    v = sum(values) % M
    _mark(f"e block {b}")
    return v


@task(returns=int)
def grand(groups: list[int], blocks: list[int]) -> int:
    _mark("s grand")
    v = (sum(groups) * 3 + sum(blocks)) % M
    _mark("e grand")
    return v


@task(out=FILE_OUT)
def write_pair(k: int, out: str) -> None:
    _mark(f"s pw {k}")
    with open(out, "w") as f:           # line by line, as a real writer does
        for line in pair_text(k).splitlines(keepends=True):
            f.write(line)
            f.flush()
    _mark(f"e pw {k}")


@task(returns=int, src=FILE_IN)
def read_pair(k: int, src: str) -> int:
    _mark(f"s pr {k}")
    with open(src) as f:
        text = f.read()
    if text != pair_text(k):
        raise ValueError(f"pair file {k} is wrong: {text!r}")
    v = text_value(text)
    time.sleep(NAP)
    _mark(f"e pr {k}")
    return v


# $0 = the file to write, $1 = k, $2 = the ledger; exit code k % 50
BIN_SCRIPT = ('echo "s bw $1" >> "$2"; : > "$0"; i=0; while [ $i -lt %d ]; do '
              'echo "$1 $i $(( ($1 * 7919 + $i * 104729) %% 1000003 ))" >> "$0"; i=$((i+1)); '
              'done; echo "e bw $1" >> "$2"; exit $(( $1 %% 50 ))' % BIN_LINES)


@binary(binary="sh", args="-c {{script}} {{out}} {{k}} {{ledger}}", fail_by_exit_value=False)
@task(returns=int, out=FILE_OUT)
def write_bin(script: str, out: str, k: int, ledger: str) -> int: ...


@task(returns=int, src=FILE_IN)
def read_bin(k: int, src: str) -> int:
    _mark(f"s br {k}")
    with open(src) as f:
        text = f.read()
    if text != bin_text(k):
        raise ValueError(f"binary's file {k} is wrong: {text!r}")
    v = text_value(text)
    time.sleep(NAP)
    _mark(f"e br {k}")
    return v


# -- the plan ----------------------------------------------------------------------------
class Shape(NamedTuple):
    chains: int
    squares: int
    pairs: int
    bins: int

    @property
    def groups(self) -> int:
        return -(-self.chains // GROUP)

    @property
    def blocks(self) -> int:
        return -(-self.squares // BLOCK)

    @property
    def total(self) -> int:
        return (self.chains * CHAIN_LEN + self.groups + self.squares + self.blocks + 1
                + 2 * self.pairs + 2 * self.bins)


def shape(tasks: int) -> Shape:
    """About ``tasks`` tasks: 45 % chain steps, 10 % FILE_OUT->FILE_IN pairs (two tasks
    each: 20 %), 5 % binaries (each read by a task: 10 %), the rest squares."""
    chains = max(1, round(tasks * 0.45 / CHAIN_LEN))
    pairs = max(1, tasks // 10)
    bins = max(1, tasks // 20)
    s = Shape(chains, 0, pairs, bins)
    rest = tasks - s.total
    squares = max(1, rest - -(-rest // (BLOCK + 1)))
    return Shape(chains, squares, pairs, bins)


class Call(NamedTuple):
    kind: str          # the task function
    ident: str         # what the task writes in the ledger and results.json
    arg: int


def plan(sh: Shape) -> Iterator[Call]:
    """Every call in submission order, kinds interleaved (so every kind runs all along)."""
    def chains() -> Iterator[Call]:
        for i in range(CHAIN_LEN):
            for c in range(sh.chains):
                yield Call("step", f"step {c} {i}", c)
            if i == CHAIN_LEN - 1:
                for g in range(sh.groups):
                    yield Call("group_total", f"group {g}", g)

    def squares() -> Iterator[Call]:
        for k in range(sh.squares):
            yield Call("square", f"sq {k}", k)
            if k % BLOCK == BLOCK - 1 or k == sh.squares - 1:
                yield Call("block_sum", f"block {k // BLOCK}", k // BLOCK)

    def pairs() -> Iterator[Call]:
        for k in range(sh.pairs):
            yield Call("write_pair", f"pw {k}", k)
            yield Call("read_pair", f"pr {k}", k)

    def bins() -> Iterator[Call]:
        for k in range(sh.bins):
            yield Call("write_bin", f"bw {k}", k)
            yield Call("read_bin", f"br {k}", k)

    streams = [chains(), squares(), pairs(), bins()]
    while streams:
        for s in list(streams):
            for _ in range(8):
                c = next(s, None)
                if c is None:
                    streams.remove(s)
                    break
                yield c
    yield Call("grand", "grand", 0)


def ordinals(sh: Shape) -> dict[tuple[str, int], str]:
    """(function name, n) -> identity of the n-th call of that function (1-based), as
    the resume log and the journal count calls."""
    seen: dict[str, int] = {}
    out = {}
    for c in plan(sh):
        n = seen[c.kind] = seen.get(c.kind, 0) + 1
        out[(c.kind, n)] = c.ident
    return out


def expected_values(sh: Shape) -> dict[str, int]:
    """identity -> the value its task must return (tasks that return one)."""
    out: dict[str, int] = {}
    ends = []
    for c in range(sh.chains):
        v = c
        for i in range(CHAIN_LEN):
            v = mix(v, c * 1000 + i)
            out[f"step {c} {i}"] = v
        ends.append(v)
    groups = []
    for g in range(sh.groups):
        out[f"group {g}"] = sum(ends[g * GROUP:(g + 1) * GROUP]) % M
        groups.append(out[f"group {g}"])
    blocks = []
    for b in range(sh.blocks):
        vals = [mix(k, k) for k in range(b * BLOCK, min(sh.squares, (b + 1) * BLOCK))]
        for k, v in zip(range(b * BLOCK, sh.squares), vals):
            out[f"sq {k}"] = v
        out[f"block {b}"] = sum(vals) % M
        blocks.append(out[f"block {b}"])
    out["grand"] = (sum(groups) * 3 + sum(blocks)) % M
    for k in range(sh.pairs):
        out[f"pr {k}"] = text_value(pair_text(k))
    for k in range(sh.bins):
        out[f"bw {k}"] = k % 50
        out[f"br {k}"] = text_value(bin_text(k))
    return out


def expected_files(sh: Shape, out_dir: str) -> dict[str, str]:
    """path -> the text the file must hold at the end."""
    files = {pair_path(out_dir, k): pair_text(k) for k in range(sh.pairs)}
    files.update({bin_path(out_dir, k): bin_text(k) for k in range(sh.bins)})
    return files


def pair_path(out_dir: str, k: int) -> str:
    return os.path.join(out_dir, "pairs", f"p{k}.txt")


def bin_path(out_dir: str, k: int) -> str:
    return os.path.join(out_dir, "bins", f"b{k}.txt")


# -- the run -------------------------------------------------------------------------------
def main(tasks: int, out_dir: str) -> None:
    sh = shape(tasks)
    os.makedirs(os.path.join(out_dir, "pairs"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "bins"), exist_ok=True)
    futs: dict[str, Any] = {}
    prev = {c: c for c in range(sh.chains)}
    squares: list[Any] = []
    for call in plan(sh):
        kind, ident, a = call
        if kind == "step":
            i = int(ident.split()[2])
            futs[ident] = prev[a] = step(a, i, prev[a])
        elif kind == "group_total":
            ends = [prev[c] for c in range(a * GROUP, min(sh.chains, (a + 1) * GROUP))]
            futs[ident] = group_total(a, ends)
        elif kind == "square":
            futs[ident] = f = square(a)
            squares.append(f)
        elif kind == "block_sum":
            futs[ident] = block_sum(a, squares[a * BLOCK:(a + 1) * BLOCK])
        elif kind == "write_pair":
            write_pair(a, pair_path(out_dir, a))
        elif kind == "read_pair":
            futs[ident] = read_pair(a, pair_path(out_dir, a))
        elif kind == "write_bin":
            futs[ident] = write_bin(BIN_SCRIPT, bin_path(out_dir, a), a, LEDGER)
        elif kind == "read_bin":
            futs[ident] = read_bin(a, bin_path(out_dir, a))
        elif kind == "grand":
            futs[ident] = grand([futs[f"group {g}"] for g in range(sh.groups)],
                                [futs[f"block {b}"] for b in range(sh.blocks)])
    names = list(futs)
    values = wait_on([futs[n] for n in names])
    path = os.path.join(out_dir, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(dict(zip(names, values)), f)
    os.replace(path + ".tmp", path)
    print(f"CHAOS DONE {len(names)} values, {sh.total} tasks")


if __name__ == "__main__":
    main(int(sys.argv[1]), os.path.abspath(sys.argv[2]))
