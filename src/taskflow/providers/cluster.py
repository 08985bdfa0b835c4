"""The cluster file: which nodes a run uses and how to reach them (YAML).

::

    placement: locality            # locality | least-loaded | fifo
    known_hosts: ~/.ssh/known_hosts
    accept_new_host_keys: false    # true: trust (and record) keys of hosts never seen before
    nodes:
      - name: local                # a node on this machine (the master's own cores)
        local: true
        computing_units: 2
      - name: h1
        host: 10.200.0.131
        port: 22
        user: root
        identity_file: ~/.ssh/id_ed25519   # else ssh-agent and ~/.ssh/id_* keys
        computing_units: 2
        memory: 4                  # GB; default: what the host reports
        memory_budget: "60%"       # above it, held values spill to disk (GB, "4GiB", "60%")
        memory_pause: "80%"        # above it, no new task that only makes values
        gpus: 0                    # GPUs 0..N-1 (the same as resources: {gpu: [0, .., N-1]})
        resources:                 # named resources tasks ask for (@constraint(resources=))
          license: 4               # a count of tokens
          gpu: [0, 1]              # indices of devices: tasks may share one by fractions
          socket: [0, 1]
        python: /usr/bin/python3   # an interpreter that can import taskflow (same version)
        install: false             # true: the master installs its taskflow there (a venv)
        working_dir: ~/taskflow    # created if missing; staged files live below it
        shared_fs: false           # false: FILE_IN/OUT versions are copied over SFTP
        env: {OMP_NUM_THREADS: "1"}
        setup: ["module load python/3.11", ". ~/venv/bin/activate"]

Workers from Slurm instead of (or besides) a list of hosts: a ``slurm``
section (``nodes`` may then be left out)::

    slurm:
      mode: pilot                  # batch: one allocation of `nodes` nodes; pilot: `nodes` jobs;
                                   # allocation: the one this master runs in (taskflow submit)
      nodes: 8
      cpus: 4                      # slots per node (default: what the node has)
      partition: debug
      time: "30"                   # walltime (sbatch --time); agents drain before it ends
      account: proj1
      qos: normal
      memory: 8G                   # sbatch --mem
      sbatch: ["--exclusive"]      # extra #SBATCH lines
      worker_init: ["module load python/3.11", ". ~/venv/bin/activate"]
      max_queued: 2                # pilots pending at once (per-user backfill limits)
      idle_timeout: 120            # s a pilot's agent stays idle before leaving
      drain_margin: 60             # s before the walltime: no new task, SIGTERM (drain)
      host: 10.0.0.5               # address the agents dial back to (default 127.0.0.1)

Every mistake (an unknown key, a wrong type, a missing ``host``) is a
:class:`ClusterConfigError` that names the file, the line and the key.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from ..errors import ClusterConfigError
from ..wire import budget
from .nodeconfig import NodeConfig as NodeConfig   # (its public name too)
from .nodeconfig import declared_resources

if TYPE_CHECKING:
    from .base import Provider

PLACEMENTS = ("locality", "least-loaded", "fifo")


@dataclass
class ClusterConfig:
    nodes: list[NodeConfig]
    placement: str = "locality"
    known_hosts: str | None = None
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    heartbeat_timeout: float = 15.0
    sample_interval: float = 2.0
    path: str = ""
    slurm: dict[str, Any] | None = None       # SlurmProvider keywords (the ``slurm`` section)
    memory_budget: float | str | None = None  # every node's, unless it says (Runtime's)
    memory_pause: float | str | None = None

    def providers(self) -> list[Provider]:
        """The providers that start these nodes (SSH ones need paramiko)."""
        out: list[Provider] = []
        remote = [n for n in self.nodes if not n.local]
        for n in self.nodes:
            if n.local:
                from .local import LocalProvider
                out.append(LocalProvider(n.computing_units or os.cpu_count() or 1,
                                         memory_gb=n.memory, name=n.name, gpus=n.gpus,
                                         resources=n.resources,
                                         memory_budget=n.memory_budget,
                                         memory_pause=n.memory_pause))
        if remote:
            from .ssh import SSHProvider
            out.append(SSHProvider(remote, known_hosts=self.known_hosts,
                                   accept_new_host_keys=self.accept_new_host_keys,
                                   connect_timeout=self.connect_timeout,
                                   heartbeat_timeout=self.heartbeat_timeout,
                                   sample_interval=self.sample_interval))
        if self.slurm is not None:
            from .slurm.provider import SlurmProvider
            kw = dict(self.slurm)
            mode = kw.pop("mode", "batch")
            work, history = kw.pop("work", None), kw.pop("history", None)
            if mode == "allocation":        # the master runs inside it (taskflow submit)
                from .slurm.alloc import AllocationProvider
                out.append(AllocationProvider(kw.pop("nodes", None), **kw))
            elif mode == "auto":            # batch or pilots, from the SPA model
                from .slurm.auto import choose
                nodes = kw.pop("nodes", 1)
                mode, line, numbers = choose(nodes, kw, work, root=history)
                provider = SlurmProvider(mode, nodes, **kw)
                provider.chose(line, numbers)
                out.append(provider)
            else:
                out.append(SlurmProvider(mode, kw.pop("nodes", 1), **kw))
        return out


_TOP = {"placement": str, "known_hosts": str, "accept_new_host_keys": bool,
        "connect_timeout": (int, float), "heartbeat_timeout": (int, float),
        "sample_interval": (int, float), "nodes": list, "slurm": dict,
        "memory_budget": (int, float, str), "memory_pause": (int, float, str)}
_SLURM = {"mode": str, "nodes": int, "cpus": int, "partition": str, "time": (str, int),
          "account": str, "qos": str, "memory": str, "sbatch": list, "worker_init": list,
          "max_queued": int, "idle_timeout": (int, float), "drain_margin": (int, float),
          "python": str, "host": str, "poll": (int, float), "poll_slow": (int, float),
          "controller_wait": (int, float), "work": (int, float), "history": str}
_SLURM_KW = {"time": "time_limit", "sbatch": "sbatch_lines"}   # file key -> SlurmProvider's
_NODE = {"name": str, "host": str, "port": int, "user": str, "identity_file": str,
         "computing_units": int, "memory": (int, float), "gpus": int, "python": str,
         "working_dir": str, "shared_fs": bool, "env": dict, "setup": list, "local": bool,
         "install": (bool, list), "memory_budget": (int, float, str),
         "memory_pause": (int, float, str), "resources": dict}
_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", list: "a list",
               dict: "a mapping", (int, float): "a number", (str, int): "a string or minutes",
               (bool, list): "true, false or a list of pip requirements",
               (int, float, str): "GB, an amount (\"4GiB\") or a share (\"60%\")"}


def load_cluster(path: str) -> ClusterConfig:
    """Read and check a cluster file."""
    path = os.path.abspath(path)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        raise ClusterConfigError(f"cannot read cluster file {path}: {exc}") from exc
    return parse_cluster(text, path)


def parse_cluster(text: str, path: str = "<cluster>") -> ClusterConfig:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ClusterConfigError(f"{path}: not valid YAML: {exc}") from exc
    if root is None or not isinstance(root, yaml.MappingNode):
        raise ClusterConfigError(f"{path}: the cluster file must be a mapping with a 'nodes' list")
    top = _mapping(root, _TOP, path, "the cluster file")
    slurm = _slurm_section(top.pop("slurm"), path) if "slurm" in top else None
    if "nodes" not in top and slurm is None:
        raise ClusterConfigError(f"{path}:{root.start_mark.line + 1}: missing key 'nodes' "
                                 f"(a list of nodes) or a 'slurm' section")
    nodes_node = top.pop("nodes")[0] if "nodes" in top else yaml.SequenceNode("", [])
    nodes = []
    names: set[str] = set()
    for i, item in enumerate(nodes_node.value):
        if not isinstance(item, yaml.MappingNode):
            raise ClusterConfigError(f"{path}:{item.start_mark.line + 1}: nodes[{i}] must be a "
                                     f"mapping (host: ..., user: ...)")
        raw = {k: v for k, (_, v) in _mapping(item, _NODE, path, f"nodes[{i}]").items()}
        line = item.start_mark.line + 1
        local = bool(raw.get("local", False))
        if not local and not raw.get("host"):
            raise ClusterConfigError(f"{path}:{line}: nodes[{i}] has no 'host' (or say local: true)")
        raw.setdefault("name", "local" if local else raw["host"])
        if local:
            raw.setdefault("shared_fs", True)
        if raw["name"] in names:
            raise ClusterConfigError(f"{path}:{line}: node name {raw['name']!r} is used twice")
        names.add(raw["name"])
        for k in ("env",):
            if k in raw:
                raw[k] = {str(a): str(b) for a, b in raw[k].items()}
        if "setup" in raw and not all(isinstance(s, str) for s in raw["setup"]):
            raise ClusterConfigError(f"{path}:{line}: nodes[{i}].setup must be a list of strings")
        if isinstance(raw.get("install"), list) and \
                not all(isinstance(r, str) and r for r in raw["install"]):
            raise ClusterConfigError(f"{path}:{line}: nodes[{i}].install must be true, false "
                                     f"or a list of pip requirements (strings)")
        if local and raw.get("install"):
            raise ClusterConfigError(f"{path}:{line}: nodes[{i}] is local: install: true is for "
                                     f"remote hosts (the master's own taskflow runs here)")
        if raw.get("identity_file"):
            raw["identity_file"] = os.path.expanduser(raw["identity_file"])
        if raw.get("computing_units") is not None and raw["computing_units"] < 1:
            raise ClusterConfigError(f"{path}:{line}: nodes[{i}].computing_units must be >= 1")
        if "resources" in raw or raw.get("gpus"):
            try:
                raw["resources"] = declared_resources(raw.get("resources", {}),
                                                      raw.get("gpus") or 0)
            except ValueError as exc:
                raise ClusterConfigError(f"{path}:{line}: nodes[{i}]: {exc}") from None
        nodes.append(NodeConfig(**raw))
    if not nodes and slurm is None:
        raise ClusterConfigError(f"{path}: 'nodes' is empty: list at least one node")
    vals = {k: v for k, (_, v) in top.items()}
    if vals.get("placement", "locality") not in PLACEMENTS:
        line = top["placement"][0].start_mark.line + 1
        raise ClusterConfigError(f"{path}:{line}: placement {vals['placement']!r} is not one of "
                                 f"{', '.join(PLACEMENTS)}")
    if vals.get("known_hosts"):
        vals["known_hosts"] = os.path.expanduser(vals["known_hosts"])
    return ClusterConfig(nodes=nodes, path=path, slurm=slurm, **vals)


def _slurm_section(entry: tuple[Any, Any], path: str) -> dict[str, Any]:
    """The ``slurm`` section as SlurmProvider keywords, checked like the rest."""
    node, _ = entry
    if not isinstance(node, yaml.MappingNode):
        raise ClusterConfigError(f"{path}:{node.start_mark.line + 1}: 'slurm' must be a mapping "
                                 f"(mode: batch|pilot, nodes: N, ...)")
    raw = _mapping(node, _SLURM, path, "slurm")
    out = {}
    for key, (vnode, value) in raw.items():
        line = vnode.start_mark.line + 1
        if key == "mode" and value not in ("batch", "pilot", "auto", "allocation"):
            raise ClusterConfigError(f"{path}:{line}: slurm.mode {value!r} is not batch, pilot, "
                                     f"auto or allocation")
        if key in ("nodes", "cpus", "max_queued") and value < 1:
            raise ClusterConfigError(f"{path}:{line}: slurm.{key} must be >= 1")
        if key in ("sbatch", "worker_init") and not all(isinstance(x, str) for x in value):
            raise ClusterConfigError(f"{path}:{line}: slurm.{key} must be a list of strings")
        out[_SLURM_KW.get(key, key)] = str(value) if key == "time" else value
    return out


def _mapping(node: Any, schema: dict[str, Any], path: str, what: str) -> dict[str, tuple[Any, Any]]:
    """Check a mapping's keys and value types; return {key: (yaml node, python value)}."""
    out = {}
    for knode, vnode in node.value:
        key = knode.value
        line = knode.start_mark.line + 1
        if key not in schema:
            raise ClusterConfigError(
                f"{path}:{line}: unknown key {key!r} in {what}; known keys: "
                f"{', '.join(sorted(schema))}")
        value = yaml.safe_load(yaml.serialize(vnode))
        want = schema[key]
        ok = isinstance(value, want) and not (want in (int, (int, float)) and isinstance(value, bool))
        if value is None and key in ("user", "identity_file", "memory", "computing_units"):
            ok = True
        if not ok:
            raise ClusterConfigError(
                f"{path}:{line}: {what}.{key} must be {_TYPE_NAMES[want]}, got "
                f"{type(value).__name__} {value!r}")
        if key in ("memory_budget", "memory_pause"):
            try:
                budget.check(value, f"{what}.{key}")
            except ValueError as exc:
                raise ClusterConfigError(f"{path}:{line}: {exc}") from None
        out[key] = (vnode, value)
    return out


def runtime_options(path: str | None, placement: str) -> dict[str, Any]:
    """Runtime keywords for a run with cluster file ``path`` (None: this machine only).

    Whatever keeps the file's nodes from being set up (the file itself, paramiko
    missing, ``mode: allocation`` outside an allocation...) raises
    :class:`ClusterConfigError` with the reason (``taskflow run`` prints it).
    """
    if not path:
        return {"placement": placement}
    try:
        cfg = load_cluster(path)
        providers = cfg.providers()
    except ClusterConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's config: one error type, its reason
        raise ClusterConfigError(str(exc)) from exc
    # a placement other than the default (given on the command line) wins over the file's
    return {"placement": placement if placement != "locality" else cfg.placement,
            "providers": providers, "memory_budget": cfg.memory_budget,
            "memory_pause": cfg.memory_pause}


def slurm_provider(section: dict[str, Any], source: str) -> Provider:
    """The provider of a ``slurm`` section given as a mapping (not read from a file).

    Its keys and checks are the cluster file's; a wrong one raises
    :class:`ClusterConfigError` naming ``source`` where a file would be named,
    a provider that cannot work here its own error (a ``RuntimeError``).
    """
    (provider,) = parse_cluster(yaml.safe_dump({"slurm": section}), source).providers()
    return provider
