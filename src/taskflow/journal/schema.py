"""The journal's tables (SQLite, WAL mode), shared by the writer and the reader.

run         one row: the run's id, times, state, command line, slot count
tasks       one row per task: name, function, parameters in short form,
            constraints, node, state, timestamps of each state, attempts,
            error's first line, full error and remote traceback
deps        task -> the tasks whose outputs it reads
transitions the state changes the tasks row cannot hold: one RETRY row per
            failed attempt that was run again (time, node, reason); the
            regular SUBMITTED/DISPATCHED/RUNNING/end times are columns of
            tasks (``Journal.task`` merges both into one list)
nodes       joins and losses of node agents with their description
samples     the resource samples the nodes report (cpu %, memory %, ...)
logs        every captured output line: task, time, level (STDOUT, STDERR,
            RAW), node, text
"""
from __future__ import annotations

JOURNAL_NAME = "journal.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    run_id TEXT PRIMARY KEY, t_start REAL, t_end REAL, state TEXT, argv TEXT, cwd TEXT,
    hostname TEXT, pid INTEGER, workers INTEGER, version TEXT, n_submitted INTEGER,
    n_done INTEGER, n_failed INTEGER, n_cancelled INTEGER, n_retries INTEGER);
CREATE TABLE IF NOT EXISTS tasks (
    id INTEGER PRIMARY KEY, name TEXT, func TEXT, params TEXT, constraints TEXT,
    node TEXT, state TEXT, t_submit REAL, t_dispatch REAL, t_start REAL, t_end REAL,
    attempts INTEGER DEFAULT 0, exit_code INTEGER, error TEXT, error_full TEXT,
    traceback TEXT);
CREATE TABLE IF NOT EXISTS deps (task_id INTEGER, dep_id INTEGER);
CREATE INDEX IF NOT EXISTS deps_task ON deps(task_id);
CREATE TABLE IF NOT EXISTS transitions (
    task_id INTEGER, t REAL, state TEXT, node TEXT, info TEXT);
CREATE INDEX IF NOT EXISTS transitions_task ON transitions(task_id);
CREATE TABLE IF NOT EXISTS nodes (
    name TEXT, t_join REAL, t_lost REAL, slots INTEGER, info TEXT, reason TEXT);
CREATE TABLE IF NOT EXISTS samples (
    node TEXT, t REAL, cpu REAL, mem REAL, load1 REAL, data TEXT);
CREATE TABLE IF NOT EXISTS logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id INTEGER, t REAL, level TEXT,
    node TEXT, line TEXT);
CREATE INDEX IF NOT EXISTS logs_task ON logs(task_id, id);
"""
