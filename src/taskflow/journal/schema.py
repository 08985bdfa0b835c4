"""The journal's tables (SQLite, WAL mode), shared by the writer and the reader.

run         one row: the run's id, times, state (and the reason when it failed or
            was interrupted, one line), command line, slot count
tasks       a view, one row per task: name, function, parameters in short
            form, constraints, node, state, timestamps of each state,
            attempts (the times it was started in the run: 1 is its first run,
            one more per retry or worker death), exit code, error's first line,
            full error and remote traceback. It joins task_rows (what differs per task) with specs
            (name, function and constraints, once per task function): a
            narrower row is about a third cheaper to insert, and a run
            inserts tens of thousands of them a second
deps        task -> the tasks whose outputs it reads
children    parent -> the tasks it called while it ran (nested calls)
transitions the state changes the tasks row cannot hold: one RETRY row per
            failed attempt that was run again (time, node, reason) and one
            ATTEMPT row with that attempt's start, end and measures (JSON:
            the trace's RETRIED rows); the
            regular SUBMITTED/DISPATCHED/RUNNING/end times are columns of
            tasks (``Journal.task`` merges both into one list)
nodes       joins and losses of node agents with their description
samples     the resource samples the nodes report (cpu %, memory %, ...)
logs        every captured output line: task, time, level (STDOUT, STDERR,
            RAW), node, text
usage       CPU seconds, peak resident bytes and bytes read and written (rchar,
            wchar) of a task, measured on its node (tasks not known to be short:
            taskflow.agent.executor.usage), and how the peak was measured
            (rss_how: wait4, vmhwm, children, at-least, at-most,
            engine-client); the last
            measured attempt
moves       values over the inline limit that moved (runtime.loop.fetches, relay): when
            the move began and ended, bytes, from which node to which ("master": to the
            master), the task it moved for (0: the master's own wait) and the task that
            made the value
streams     one row per stream the run used: its kind (objects, files), name, when it
            was first used and closed, the items published, the error it was closed
            with (the producer's failure, NodeLost)
stream_tasks the tasks that produced or consumed each stream, and their parameter
            (task 0: the main program)
memory      what a node's memory budget did (agent.memory): one row per report,
            with its resident bytes, bytes of values held in memory and on
            disk, whether it is paused, and the values spilled (count,
            bytes) and read back since its last report
"""
from __future__ import annotations

JOURNAL_NAME = "journal.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    run_id TEXT PRIMARY KEY, t_start REAL, t_end REAL, state TEXT, argv TEXT, cwd TEXT,
    hostname TEXT, pid INTEGER, workers INTEGER, version TEXT, n_submitted INTEGER,
    n_done INTEGER, n_failed INTEGER, n_cancelled INTEGER, n_retries INTEGER, reason TEXT);
CREATE TABLE IF NOT EXISTS specs (
    id INTEGER PRIMARY KEY, name TEXT, func TEXT, constraints TEXT);
CREATE TABLE IF NOT EXISTS task_rows (
    id INTEGER PRIMARY KEY, spec INTEGER, params TEXT, node TEXT, state TEXT,
    t_submit REAL, t_dispatch REAL, t_start REAL, t_end REAL,
    attempts INTEGER DEFAULT 0, exit_code INTEGER, error TEXT, error_full TEXT,
    traceback TEXT);
CREATE VIEW IF NOT EXISTS tasks AS SELECT
    r.id AS id, s.name AS name, s.func AS func, r.params AS params,
    s.constraints AS constraints, r.node AS node, r.state AS state,
    r.t_submit AS t_submit, r.t_dispatch AS t_dispatch, r.t_start AS t_start,
    r.t_end AS t_end, r.attempts AS attempts, r.exit_code AS exit_code,
    r.error AS error, r.error_full AS error_full, r.traceback AS traceback
    FROM task_rows r JOIN specs s ON s.id = r.spec;
CREATE TABLE IF NOT EXISTS deps (task_id INTEGER, dep_id INTEGER);
CREATE INDEX IF NOT EXISTS deps_task ON deps(task_id);
CREATE TABLE IF NOT EXISTS children (parent_id INTEGER, child_id INTEGER);
CREATE INDEX IF NOT EXISTS children_parent ON children(parent_id);
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
CREATE TABLE IF NOT EXISTS usage (
    task_id INTEGER PRIMARY KEY, cpu REAL, rss INTEGER, rchar INTEGER, wchar INTEGER,
    rss_how TEXT);
CREATE TABLE IF NOT EXISTS moves (
    task_id INTEGER, producer INTEGER, t_start REAL, t_end REAL, bytes INTEGER, src TEXT,
    dst TEXT);
CREATE TABLE IF NOT EXISTS streams (
    id TEXT PRIMARY KEY, kind TEXT, name TEXT, t_open REAL, t_close REAL, items INTEGER,
    error TEXT);
CREATE TABLE IF NOT EXISTS stream_tasks (stream_id TEXT, task_id INTEGER, role TEXT,
    parameter TEXT);
CREATE TABLE IF NOT EXISTS memory (
    node TEXT, t REAL, rss INTEGER, held INTEGER, spilled INTEGER, paused INTEGER,
    spills INTEGER, spilled_bytes INTEGER, reads INTEGER);
"""
