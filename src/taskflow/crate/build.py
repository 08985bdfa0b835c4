"""One run's journal as a Workflow Run Crate, built with the ``rocrate`` package.

The crate follows the Workflow Run Crate and Provenance Run Crate profiles
(RO-Crate 1.1; docs/guide/record-outside.md says what each entity holds):

- the script is the workflow (``ComputationalWorkflow``, with its sha256), each
  task name a step (``HowToStep``) whose tool is the task function or the
  program it runs (``SoftwareApplication``);
- the run is a ``CreateAction`` (start, end, status, the user as agent, the
  command line; the files it read and wrote), taskflow's part an
  ``OrganizeAction`` whose ``ControlAction`` per task links its step to its
  action;
- each task is a ``CreateAction`` of its tool: its parameters' values as
  ``PropertyValue`` (as the journal keeps them: a repr cut at 60 characters is
  marked so; a value the journal keeps by digest, its pickle over
  ``taskflow.graph.recorded.BY_DIGEST`` bytes, is named by its sha256, with its
  size as ``contentSize`` and its type and length in ``description``), the
  files it read (``object``) and wrote (``result``) with size and sha256, its
  node (``location``), attempts and the resources it used (``resourceUsage``);
- the software (taskflow, Python, each program with its resolved path and
  version) and the cluster (each node with its slots, memory and provider).

Files are referenced by their absolute ``file://`` URI, or copied into the
crate (``include_data``, up to ``max_size`` bytes each). A file deleted since
the run is still named, with the digest kept when it was last read
(:mod:`.digests`) and ``"not available"`` in its description.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from typing import Any, Iterator
from urllib.parse import quote

from rocrate.model.contextentity import ContextEntity
from rocrate.model.file import File
from rocrate.rocrate import ROCrate

from .._version import __version__
from ..journal.reader import Journal
from ..observe.runinfo import header
from .digests import Digests
from .software import Program, resolve

PROFILES = (("https://w3id.org/ro/wfrun/process/0.5", "Process Run Crate", "0.5"),
            ("https://w3id.org/ro/wfrun/workflow/0.5", "Workflow Run Crate", "0.5"),
            ("https://w3id.org/ro/wfrun/provenance/0.5", "Provenance Run Crate", "0.5"),
            ("https://w3id.org/workflowhub/workflow-ro-crate/1.0", "Workflow RO-Crate", "1.0"))
# terms of the Workflow Run Crate vocabulary the crate uses beyond RO-Crate 1.1's context
TERMS = {"resourceUsage": "https://w3id.org/ro/terms/workflow-run#resourceUsage",
         "sha256": "https://w3id.org/ro/terms/workflow-run#sha256"}
MAX_SIZE = 10 * 1024 * 1024      # bytes of a file copied into the crate (--max-size)
# tasks listed one by one (--max-tasks): the crate is built in memory, ~10 KB a task
MAX_TASKS = 50_000
CUT = 60                         # characters the journal keeps of a parameter's repr
# schema.org's action states of the run's and the tasks' states (the rest: FailedActionStatus)
STATUS = {"DONE": "CompletedActionStatus", "finished": "CompletedActionStatus",
          "running": "ActiveActionStatus", "RUNNING": "ActiveActionStatus",
          "DISPATCHED": "ActiveActionStatus", "SUBMITTED": "PotentialActionStatus",
          "READY": "PotentialActionStatus"}
_PARAM = re.compile(r", (?=[A-Za-z_]\w*=)")


def _iso(t: float | None) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z" \
        if t else None


def _slug(text: str) -> str:
    return quote(text.replace(" ", "_"), safe="._-")


def parameters(text: str | None) -> Iterator[tuple[str, str]]:
    """(name, value) pairs of a task's parameters as the journal keeps them
    (``a=1, f=<file in.txt>``)."""
    for part in _PARAM.split(text or ""):
        name, eq, value = part.partition("=")
        if eq:
            yield name, value


class Builder:
    """Builds one crate; :meth:`build` returns it (``rocrate.rocrate.ROCrate``)."""

    def __init__(self, run_dir: str, include_data: bool = False, max_size: int = MAX_SIZE,
                 license: str | None = None, max_tasks: int = MAX_TASKS) -> None:
        self.run_dir = run_dir
        self.license = license
        self.max_tasks = max_tasks
        self.left_out = 0               # tasks past max_tasks
        self.include_data = include_data
        self.max_size = max_size
        self.digests = Digests(run_dir)
        self.crate = ROCrate(version="1.1")       # (the run crate profiles build on 1.1)
        self.crate.metadata.extra_terms.update(TERMS)
        self._files: dict[str, ContextEntity] = {}      # path -> its entity
        self._written: set[str] = set()                  # paths some task wrote
        self._params: dict[tuple[str, str], ContextEntity] = {}
        self._tools: dict[str, ContextEntity] = {}
        self._steps: dict[str, ContextEntity] = {}
        self._nodes: dict[str, ContextEntity] = {}
        self._programs: dict[str, Program] = {}
        self.cwd: str | None = None

    def add(self, id_: str, props: dict[str, Any]) -> ContextEntity:
        return self.crate.add(ContextEntity(self.crate, id_, properties=props))

    # -- the whole run ---------------------------------------------------------------
    def build(self) -> ROCrate:
        with Journal(self.run_dir) as j:
            head = header(j)
            self.cwd = head.get("cwd")
            run = j.run()
            crate = self.crate
            root = crate.root_dataset
            root["name"] = f"taskflow run {head['run_id']}"
            root["description"] = (f"The run {head['run_id']} of {head['script'] or 'a program'}"
                                   f" by taskflow {head['version'] or __version__}: "
                                   f"{head['state']}. Made from its journal ({self.run_dir}).")
            root["datePublished"] = _iso(time.time())
            profiles = [self.add(uri, {"@type": "CreativeWork", "name": name, "version": v})
                        for uri, name, v in PROFILES]
            root["conformsTo"] = profiles
            root["license"] = self._license()
            nodes = j.nodes()
            engine = self._engine(head, nodes)
            workflow = self._workflow(head)
            agent = self.add(f"#{_slug(head['user'] or 'user')}",
                             {"@type": "Person", "name": head["user"] or "unknown"})
            self._cluster(nodes)
            wf_run = self.add("#run", {
                "@type": "CreateAction", "name": f"Run {head['run_id']} of {workflow['name']}",
                "instrument": workflow, "agent": agent,
                "startTime": _iso(run.get("t_start")), "endTime": _iso(run.get("t_end")),
                "actionStatus": STATUS.get(str(run.get("state")), "FailedActionStatus"),
                "description": f"command line: {head['command'] or '-'}; in {head['cwd']}; "
                               f"on {head['host']} (pid {head['pid']})",
            })
            if wf_run["actionStatus"] == "FailedActionStatus":
                wf_run["error"] = f"the run {run.get('state')}: {head.get('reason') or '-'}"
            controls = self._tasks(j, workflow)
            if self.left_out:
                wf_run["description"] += (
                    f". The crate lists the first {self.max_tasks} of its "
                    f"{self.max_tasks + self.left_out} tasks one by one (--max-tasks); "
                    f"`taskflow status {head['run_id']}` counts them all")
            wf_run["object"] = [*self._arguments(head, workflow),
                                *[e for p, e in self._files.items() if p not in self._written]]
            wf_run["result"] = [e for p, e in self._files.items() if p in self._written]
            self.add("#engine-run", {
                "@type": "OrganizeAction", "name": f"taskflow {head['version'] or __version__} "
                                                   f"ran {head['run_id']}",
                "instrument": engine, "agent": agent, "object": controls, "result": wf_run,
                "startTime": _iso(run.get("t_start")), "endTime": _iso(run.get("t_end")),
                "actionStatus": wf_run["actionStatus"],
            })
            root["mentions"] = [wf_run]
        self.digests.save()
        return crate

    def _license(self) -> Any:
        """The licence the crate says (RO-Crate requires one): the one given, else an entity
        saying none was given."""
        if self.license:
            return self.license
        return self.add("#license-not-given", {
            "@type": "CreativeWork", "name": "no licence given",
            "description": "whoever made this crate did not say under which licence it may be "
                           "used (taskflow crate --license names one)"})

    def _engine(self, head: dict[str, Any], nodes: list[dict[str, Any]]) -> ContextEntity:
        """taskflow and the Python the run's nodes ran (they run the master's version; the
        Python making the crate when no node said)."""
        said = {str((n.get("info") or {}).get("python")) for n in nodes
                if (n.get("info") or {}).get("python")}
        v = sys.version_info
        version = ", ".join(sorted(said)) if said else f"{v.major}.{v.minor}.{v.micro}"
        python = self.add("#python", {"@type": "SoftwareApplication", "name": "Python",
                                      "version": version, "url": "https://www.python.org/"})
        return self.add("#taskflow", {
            "@type": "SoftwareApplication", "name": "taskflow",
            "version": head.get("version") or __version__, "softwareRequirements": python,
            "url": "https://pypi.org/project/taskflow-hpc/"})

    def _workflow(self, head: dict[str, Any]) -> ContextEntity:
        crate = self.crate
        lang = self.add("#python-language", {
            "@type": "ComputerLanguage", "name": "Python", "identifier": "https://www.python.org/",
            "url": "https://www.python.org/"})
        script = head.get("script")
        if script:
            path = os.path.join(head.get("cwd") or "", script)
        else:       # a program that started a runtime itself (python -c, pytest, ...)
            first = (head.get("command") or "").split(" ", 1)[0]
            path = shutil.which(first) or first if first else ""
        props: dict[str, Any] = {
            "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
            "name": os.path.basename(path) or "the program",
            "programmingLanguage": lang, "input": [], "output": [], "step": [], "hasPart": []}
        if not script:
            props["description"] = (f"no script: the program {path or '?'} started the run's "
                                    f"runtime itself")
        seen = self.digests.of(path) if path else None
        if seen is not None and seen.sha256:
            props.update(sha256=seen.sha256, contentSize=str(seen.size))
        if script and seen is not None and seen.exists:
            wf = crate.add_file(path, dest_path=os.path.basename(path), properties=props)
        else:       # referenced by its path (the program; a script no longer here)
            if script:
                props["description"] = f"not available: {path} is not on this machine"
            wf = crate.add(File(crate, f"file://{quote(os.path.abspath(path or 'unknown'))}",
                                properties=props))
        crate.mainEntity = wf
        crate.root_dataset["mainEntity"] = wf
        return wf

    def _arguments(self, head: dict[str, Any], workflow: ContextEntity) -> list[ContextEntity]:
        """The script's command-line arguments, as the workflow's one input ``argv``."""
        args = [str(a) for a in head.get("args") or []]
        param = self._formal("#param-argv", "argv", "Text", "the script's arguments")
        workflow.append_to("input", param)
        return [self.add("#run-argv", {"@type": "PropertyValue", "name": "argv",
                                       "value": shlex.join(args), "exampleOfWork": param})]

    def _formal(self, id_: str, name: str, kind: str, what: str) -> ContextEntity:
        e = self.crate.dereference(id_)
        if e is None:
            e = self.add(id_, {
                "@type": "FormalParameter", "name": name, "additionalType": kind,
                "description": what, "valueRequired": False,
                "conformsTo": {"@id": "https://bioschemas.org/profiles/FormalParameter/1.0-RELEASE"}})
        return e

    def _cluster(self, nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            info = n.get("info") or {}
            name = str(n["name"])
            if name in self._nodes:
                continue
            words = [f"{n.get('slots')} slots", f"{info.get('memory_gb', 0):.1f} GB memory"
                     if info.get("memory_gb") else "", f"host {info.get('hostname')}"
                     if info.get("hostname") else "", f"Python {info.get('python')}"
                     if info.get("python") else "", f"provider {info['provider']}"
                     if info.get("provider") else "", f"joined {_iso(n.get('t_join'))}",
                     f"lost {_iso(n.get('t_lost'))}: {n.get('reason') or ''}"
                     if n.get("t_lost") else ""]
            self._nodes[name] = self.add(f"#node-{_slug(name)}", {
                "@type": "Place", "name": name,
                "description": "taskflow node: " + ", ".join(w for w in words if w)})

    # -- tasks -----------------------------------------------------------------------
    def _tasks(self, j: Journal, workflow: ContextEntity) -> list[ContextEntity]:
        """The first :attr:`max_tasks` tasks, one by one; returns their ControlActions."""
        last = j.tasks(limit=1, offset=self.max_tasks - 1) if self.max_tasks > 0 else []
        cutoff = last[0]["id"] if last else 2**62       # the id of the last task listed
        files: dict[int, list[list[Any]]] = {}
        for tid, fs in j.each_files():
            if tid > cutoff:
                break
            files[tid] = fs
        values: dict[int, dict[str, list[Any]]] = {}    # task -> parameter -> what is kept
        for tid, vs in j.each_values():
            if tid > cutoff:
                break
            values[tid] = {str(v[0]): v for v in vs if isinstance(v, list) and len(v) == 5}
        controls: list[ContextEntity] = []
        for t in j.each_task_record():
            if len(controls) >= self.max_tasks:
                self.left_out += 1
                continue
            step = self._step(t["name"], t.get("constraints"), workflow)
            tool = step["workExample"]
            act = self._task(t, tool, files.get(t["id"], []), values.get(t["id"], {}))
            controls.append(self.add(f"#control-{t['id']}", {
                "@type": "ControlAction", "name": f"orchestrate {t['name']} #{t['id']}",
                "instrument": step, "object": act, "actionStatus": act["actionStatus"]}))
        return controls

    def _step(self, name: str, constraints: str | None, workflow: ContextEntity) -> ContextEntity:
        step = self._steps.get(name)
        if step is not None:
            return step
        try:
            c = json.loads(constraints or "{}")
        except ValueError:
            c = {}
        props: dict[str, Any] = {"@type": "SoftwareApplication", "name": name,
                                 "input": [], "output": []}
        declared = c.get("binary") if isinstance(c, dict) else None
        if declared:
            prog = self._programs.get(declared) or resolve(declared, self.cwd)
            self._programs[declared] = prog
            props["description"] = (f"the program {declared} ({c.get('invoker', 'binary')}"
                                    f"{', runner ' + c['runner'] if c.get('runner') else ''})"
                                    f", resolved on the master as {prog.path or 'not found'}")
            if prog.path:
                props["identifier"] = f"file://{quote(prog.path)}"
            if prog.version:
                props["softwareVersion"] = prog.version
        else:
            props["description"] = f"the Python task function {name}"
        tool = self._tools[name] = self.add(f"#tool-{_slug(name)}", props)
        step = self._steps[name] = self.add(f"#step-{_slug(name)}", {
            "@type": "HowToStep", "name": name, "position": str(len(self._steps)),
            "workExample": tool})
        workflow.append_to("step", step)
        workflow.append_to("hasPart", tool)
        return step

    def _task(self, t: dict[str, Any], tool: ContextEntity, files: list[list[Any]],
              kept: dict[str, list[Any]]) -> ContextEntity:
        tid, name = t["id"], t["name"]
        objects: list[ContextEntity] = []
        results: list[ContextEntity] = []
        for pname, value in parameters(t.get("params")):
            if value.startswith(("<file ", "<dir ")):
                continue        # (named below with its path)
            objects.append(self._value(tid, name, tool, pname, value, kept.get(pname)))
        for pname, direction, path, is_dir in files:
            e = self._file(path, is_dir)
            fp = self._param(name, tool, pname, "Directory" if is_dir else "File",
                             "output" if direction == "out" else "input")
            e.append_to("exampleOfWork", fp)
            if direction != "out":
                objects.append(e)
            if direction != "in":
                results.append(e)
                self._written.add(path)
        props: dict[str, Any] = {
            "@type": "CreateAction", "name": f"{name} #{tid}", "instrument": tool,
            "startTime": _iso(t.get("t_start")), "endTime": _iso(t.get("t_end")),
            "actionStatus": STATUS.get(t.get("state") or "", "FailedActionStatus"),
            "object": objects, "result": results}
        node = self._nodes.get(t.get("node") or "")
        if node is not None:
            props["location"] = node
        if t.get("state") == "FAILED":
            props["error"] = (t.get("error") or "failed")[:500]
        elif props["actionStatus"] == "FailedActionStatus":
            props["error"] = f"the task ended {t.get('state')}"
        usage = self._usage(t)
        if usage:
            props["resourceUsage"] = usage
        return self.add(f"#task-{tid}", props)

    def _usage(self, t: dict[str, Any]) -> list[ContextEntity]:
        """The task's attempts and slots (beyond 1) and what its node measured, as
        PropertyValues."""
        tid = t["id"]
        try:
            units = json.loads(t.get("constraints") or "{}").get("computing_units") or 1
        except (ValueError, AttributeError):
            units = 1
        out = []
        for key, value, unit in (("attempts", t.get("attempts"), None),
                                 ("computing_units", units, None),
                                 ("exit_code", t.get("exit_code"), None),
                                 ("cpu_seconds", t.get("cpu"), "s"),
                                 ("peak_rss", t.get("rss"), "bytes"),
                                 ("bytes_read", t.get("rchar"), "bytes"),
                                 ("bytes_written", t.get("wchar"), "bytes")):
            if value is None or (key in ("attempts", "computing_units") and value == 1):
                continue        # (1 attempt, 1 slot: what a task without them had)
            pv = {"@type": "PropertyValue", "name": key, "value": value,
                  "propertyID": f"taskflow.{key}"}
            if unit:
                pv["unitText"] = unit
            out.append(self.add(f"#task-{tid}-{key}", pv))
        return out

    def _param(self, name: str, tool: ContextEntity, pname: str, kind: str,
               way: str) -> ContextEntity:
        fp = self._params.get((name, pname))
        if fp is None:
            fp = self._params[(name, pname)] = self._formal(
                f"#param-{_slug(name)}-{_slug(pname)}", pname, kind,
                f"parameter {pname} of {name}")
            tool.append_to(way, fp)
        return fp

    def _value(self, tid: int, name: str, tool: ContextEntity, pname: str,
               value: str, kept: list[Any] | None) -> ContextEntity:
        fp = self._param(name, tool, pname, "Text", "input")
        pv: dict[str, Any] = {"@type": "PropertyValue", "name": pname, "value": value,
                              "exampleOfWork": fp}
        if kept is not None:        # by digest: [parameter, type, length, bytes, sha256]
            _, kind, length, size, sha = kept
            pv.update(identifier=f"sha256:{sha}", sha256=sha, contentSize=str(size))
            items = "" if length is None else f" of length {length}"
            pv["description"] = f"a {kind}{items}, by the sha256 of its pickle"
        elif len(value) >= CUT - 3 and value.endswith("..."):
            pv["description"] = (f"the value's repr, cut at {CUT} characters: the journal keeps "
                                 f"no more of it")
        return self.add(f"#task-{tid}-p-{_slug(pname)}", pv)

    def _file(self, path: str, is_dir: bool) -> ContextEntity:
        e = self._files.get(path)
        if e is not None:
            return e
        seen = self.digests.of(path)
        props: dict[str, Any] = {"@type": "Dataset" if is_dir else "File",
                                 "name": os.path.basename(path), "alternateName": path}
        if seen.size is not None:
            props["contentSize"] = str(seen.size)
        if seen.sha256:
            props["sha256"] = seen.sha256
        if seen.mtime:
            props["dateModified"] = _iso(seen.mtime)
        if not seen.exists:
            props["description"] = (f"not available: {path} is not on this machine (deleted "
                                    f"since the run)" + ("; its size and sha256 as last read"
                                                         if seen.sha256 else
                                                         "; its digest was never taken"))
        crate = self.crate
        inside = (self.include_data and seen.exists and not is_dir and seen.size is not None
                  and seen.size <= self.max_size)
        if inside:
            dest = f"data/{len(self._files)}-{os.path.basename(path)}"
            e = crate.add_file(path, dest_path=dest, properties=props)
        else:
            e = crate.add(File(crate, f"file://{quote(path)}", properties=props))
        self._files[path] = e
        return e


def build(run_dir: str, include_data: bool = False, max_size: int = MAX_SIZE,
          license: str | None = None, max_tasks: int = MAX_TASKS) -> ROCrate:
    """The crate of the run in ``run_dir`` (not written); ``license``: an SPDX id or a URL."""
    return Builder(run_dir, include_data, max_size, license, max_tasks).build()
