"""PyCOMPSs ``project.xml`` / ``resources.xml`` -> taskflow nodes (``--project``, ``--resources``).

resources.xml describes machines (``ComputeNode Name=...``: processors'
``ComputingUnits``, GPU processors, ``Memory/Size`` in GB) and HTTP services
(``Http BaseUrl=...`` with ``ServiceName`` children); project.xml picks the
workers of this run (``ComputeNode``: ``InstallDir``, ``WorkingDir``,
``User`` (also inside ``Adaptors/Adaptor``), ``LimitOfTasks``,
``Application/Pythonpath``) and may give the master computing units
(``MasterNode/Processor/ComputingUnits``).

A node named ``localhost`` (or this host's name) becomes a local node; any
other becomes an SSH node with that host name, user and working directory.
``InstallDir/bin`` goes first on the node's PATH, so a virtualenv there
(``python3 -m venv InstallDir``, taskflow installed in it) is the Python
that runs the node. Slots are ``min(ComputingUnits, LimitOfTasks)``. A node
of the project that resources.xml does not describe, a missing or malformed
number, or an unknown element is an error naming the file and the node.
"""
from __future__ import annotations

import os
import shlex
import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from ..errors import ClusterConfigError
from ..providers.cluster import ClusterConfig, NodeConfig


@dataclass
class XMLConfig:
    nodes: list[NodeConfig] = field(default_factory=list)
    http: dict[str, list[str]] = field(default_factory=dict)   # service name -> base URLs

    def providers(self) -> list[Any]:
        return ClusterConfig(nodes=self.nodes).providers() if self.nodes else []


def _read(path: str, root_tag: str) -> ET.Element:
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as exc:
        raise ClusterConfigError(f"{path}: cannot read it as XML: {exc}") from None
    root = tree.getroot()
    if root.tag != root_tag:
        raise ClusterConfigError(f"{path}: the root element is <{root.tag}>, expected "
                                 f"<{root_tag}>.")
    return root


def _text(el: ET.Element | None) -> str | None:
    if el is None or el.text is None:
        return None
    t = el.text.strip()
    return t or None


def _number(el: ET.Element | None, path: str, what: str, cast: Any = int) -> Any:
    t = _text(el)
    if t is None:
        return None
    try:
        v = cast(t)
    except ValueError:
        raise ClusterConfigError(f"{path}: {what} must be a number, got {t!r}.") from None
    if v < 0:
        raise ClusterConfigError(f"{path}: {what} must be >= 0, got {t!r}.")
    return v


def _cpus_gpus(el: ET.Element, path: str, where: str) -> tuple[int | None, int]:
    cpus: int | None = None
    gpus = 0
    for proc in el.findall("Processor"):
        cu = _number(proc.find("ComputingUnits"), path, f"{where} Processor ComputingUnits")
        kind = (_text(proc.find("Type")) or "CPU").upper()
        if kind == "GPU":
            gpus += cu or 0
        elif cu is not None:
            cpus = (cpus or 0) + cu
    return cpus, gpus


def _is_local(name: str) -> bool:
    return name in ("localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn())


def load(project: str | None, resources: str | None) -> XMLConfig:
    """Read the two files (either may be left out); see the module docstring."""
    out = XMLConfig()
    described: dict[str, dict[str, Any]] = {}
    if resources:
        rpath = os.path.abspath(resources)
        root = _read(rpath, "ResourcesList")
        for cn in root.findall("ComputeNode"):
            name = cn.get("Name")
            if not name:
                raise ClusterConfigError(f"{rpath}: a <ComputeNode> has no Name attribute.")
            cpus, gpus = _cpus_gpus(cn, rpath, f"ComputeNode {name!r}")
            mem = _number(cn.find("Memory/Size"), rpath, f"ComputeNode {name!r} Memory Size",
                          float)
            described[name] = {"cpus": cpus, "gpus": gpus, "memory": mem}
        for http in root.findall("Http"):
            url = http.get("BaseUrl")
            if not url:
                raise ClusterConfigError(f"{rpath}: an <Http> resource has no BaseUrl attribute.")
            for sn in http.findall("ServiceName"):
                svc = _text(sn)
                if svc:
                    out.http.setdefault(svc, []).append(url)
    if not project:
        for name, d in described.items():        # resources alone: every machine is a worker
            out.nodes.append(_node(name, d, {}, resources or ""))
        return out
    ppath = os.path.abspath(project)
    root = _read(ppath, "Project")
    master = root.find("MasterNode")
    if master is not None:
        cpus, gpus = _cpus_gpus(master, ppath, "MasterNode")
        if cpus:
            out.nodes.append(NodeConfig(name="master", local=True, computing_units=cpus,
                                        gpus=gpus, shared_fs=True))
    for cn in root.findall("ComputeNode"):
        name = cn.get("Name")
        if not name:
            raise ClusterConfigError(f"{ppath}: a <ComputeNode> has no Name attribute.")
        if resources and name not in described:
            raise ClusterConfigError(f"{ppath}: ComputeNode {name!r} is not described in "
                                     f"{os.path.abspath(resources)} (add it there with its "
                                     f"ComputingUnits, or fix the name).")
        user = _text(cn.find("User")) or _text(cn.find("Adaptors/Adaptor/User"))
        proj = {"install_dir": _text(cn.find("InstallDir")),
                "working_dir": _text(cn.find("WorkingDir")), "user": user,
                "limit": _number(cn.find("LimitOfTasks"), ppath,
                                 f"ComputeNode {name!r} LimitOfTasks"),
                "pythonpath": _text(cn.find("Application/Pythonpath"))}
        out.nodes.append(_node(name, described.get(name, {}), proj, ppath))
    if not out.nodes:
        raise ClusterConfigError(f"{ppath}: no worker: add a <ComputeNode Name=...> (or "
                                 f"computing units to <MasterNode>).")
    names = [n.name for n in out.nodes]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ClusterConfigError(f"{ppath}: ComputeNode {dup[0]!r} is listed twice.")
    return out


def _node(name: str, res: dict[str, Any], proj: dict[str, Any], path: str) -> NodeConfig:
    cpus = res.get("cpus")
    limit = proj.get("limit")
    slots = min(x for x in (cpus, limit) if x) if (cpus or limit) else None
    if slots is not None and slots < 1:
        raise ClusterConfigError(f"{path}: ComputeNode {name!r} has no computing units.")
    env: dict[str, str] = {}
    if proj.get("pythonpath"):
        env["PYTHONPATH"] = proj["pythonpath"]
    if _is_local(name):
        return NodeConfig(name="localhost", local=True, computing_units=slots or os.cpu_count(),
                          memory=res.get("memory"), gpus=res.get("gpus", 0), shared_fs=True,
                          env=env)
    setup = []
    if proj.get("install_dir"):
        bindir = os.path.join(proj["install_dir"], "bin")
        setup.append(f'export PATH={shlex.quote(bindir)}:"$PATH"')
    return NodeConfig(name=name, host=name, user=proj.get("user"), computing_units=slots,
                      memory=res.get("memory"), gpus=res.get("gpus", 0),
                      working_dir=proj.get("working_dir") or "~/.taskflow", env=env, setup=setup)
