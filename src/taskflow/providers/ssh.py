"""The SSH provider: node agents on other hosts, reached with paramiko.

For each node the master opens one SSH connection, checks the host key
against known_hosts (unknown or changed keys are refused unless
``accept_new_host_keys`` is set), then runs ``<python> -m taskflow.node
--stdio`` in the node's working directory: one remote interpreter per host,
and the agent's READY is the version check (no separate probe: it doubled
the interpreters started, half the start-up of 60 hosts). The shell line before it prints the working
directory on stderr (for nodes without the master's filesystem), and a start
that fails is explained from the shell's exit status and the remote stderr:
an interpreter that is not there, taskflow not importable by it, a working
directory that cannot be made, a set-up command that failed. Hosts connect
and start in parallel, at most ``max_starting`` at once.

The channel is bridged to a local socketpair by two small pump threads, so
the runtime's :class:`NodeHandle` and loop see an ordinary file descriptor
and speak the one framed protocol, whatever the transport. All traffic,
including SFTP file staging, stays inside that SSH connection. taskflow is
shipped to the node only when its cluster-file entry says ``install: true``
(:mod:`.selfinstall`); otherwise a node whose ``python`` imports another
version (or none) is refused with how to install the master's there.
"""
from __future__ import annotations

import logging
import os
import select
import shlex
import socket
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._version import DIST_NAME, __version__, install_hint
from ..errors import HostKeyError, NodeStartError, VersionMismatch
from ..wire import adoption
from ..wire import messages as M
from ..wire import protocol as P
from .adopting import handshake_over, relay
from . import selfinstall
from .base import AdoptFrom, Provider
from .comeback import Comeback
from .handle import NodeHandle
from .sshnode import SSHNode

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .base import NodeSink
    from .nodeconfig import NodeConfig

try:
    import paramiko
except ImportError:  # pragma: no cover - optional dependency
    paramiko = None  # type: ignore[assignment]  # a module or None: not expressible

CWD_MARK = b"taskflow-cwd:"   # the shell's line on stderr before the agent: where it runs
MAX_STARTING = 64             # hosts connecting and starting at once (pdsh's fan-out is 32)


def _py(c: NodeConfig) -> str:
    """The node's interpreter as a shell word list (``python`` may carry options)."""
    return " ".join(shlex.quote(a) for a in shlex.split(c.python))


if TYPE_CHECKING:
    _PolicyBase = paramiko.MissingHostKeyPolicy
else:   # without paramiko the policies are never used, but the module must import
    _PolicyBase = paramiko.MissingHostKeyPolicy if paramiko else object


class _Policy(_PolicyBase):
    def __init__(self, known_hosts: str) -> None:
        self.known_hosts = known_hosts


class _Refuse(_Policy):
    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        fp = key.fingerprint if hasattr(key, "fingerprint") else key.get_base64()[:24]
        host, _, port = hostname.strip("[").partition("]:")
        scan = f"ssh-keyscan {'-p ' + port + ' ' if port else ''}{host} >> {self.known_hosts}"
        raise HostKeyError(
            f"host key of {hostname} ({key.get_name()} {fp}) is not in {self.known_hosts}: "
            f"refusing to connect. Check the fingerprint and trust it with `{scan}` (or connect "
            f"once with ssh), or set `accept_new_host_keys: true` in the cluster file.")


class _AcceptNew(_Policy):
    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        try:
            os.makedirs(os.path.dirname(self.known_hosts) or ".", exist_ok=True)
            with open(self.known_hosts, "a") as f:
                f.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        except OSError:
            pass
        log.warning("trusting new host key of %s (%s), recorded in %s", hostname, key.get_name(),
                    self.known_hosts)


class SSHProvider(Provider):
    """Node agents on SSH hosts (one :class:`NodeConfig` per host)."""

    name = "ssh"

    def __init__(self, nodes: list[NodeConfig], *, known_hosts: str | None = None,
                 accept_new_host_keys: bool = False, connect_timeout: float = 10.0,
                 heartbeat_timeout: float = 15.0, sample_interval: float = 2.0,
                 max_starting: int = MAX_STARTING) -> None:
        if paramiko is None:
            raise NodeStartError(f"SSH nodes need paramiko: {install_hint('ssh')}")
        self.nodes = [SSHNode(n) for n in nodes]
        self.starting = threading.BoundedSemaphore(max(1, max_starting))
        self.known_hosts = os.path.expanduser(known_hosts or "~/.ssh/known_hosts")
        self.accept_new = accept_new_host_keys
        self.connect_timeout = connect_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.refusals: list[str] = []       # earlier agents not adopted, and why
        self.sample_interval = sample_interval
        self.started: tuple[Hello, float] | None = None     # (the agents' HELLO, time-out)
        self.adoptable = False      # the run's agents outlive a lost master (start)
        self.comeback: Comeback | None = None   # lost hosts taken back (providers/comeback.py)

    # -- start-up ------------------------------------------------------------
    def start(self, config: Hello, timeout: float = 30.0, *,
              adoptable: bool = False) -> list[NodeHandle]:
        handles: list[NodeHandle] = []
        errors: list[Exception] = []
        self.started = (config, timeout)
        self.adoptable = adoptable
        threads = [threading.Thread(target=self._start_one, args=(n, config, timeout, errors),
                                    daemon=True) for n in self.nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.stop()
            raise errors[0] if len(errors) == 1 else NodeStartError(
                "; ".join(str(e) for e in errors))
        for n in self.nodes:
            assert n.handle is not None     # started (no errors)
            handles.append(n.handle)
        return handles

    def _start_one(self, n: SSHNode, config: Hello, timeout: float, errors: list[Exception]) -> None:
        try:
            with self.starting:         # at most max_starting hosts connect and start at once
                self._connect(n)
                if n.cfg.install:       # taskflow in a venv of its own there (selfinstall)
                    n.cfg = replace(n.cfg, python=selfinstall.ensure(n, self._run))
                self._launch(n, config, timeout)
        except NodeStartError as exc:
            errors.append(exc)
        except Exception as exc:  # noqa: BLE001 - report every start-up failure
            errors.append(NodeStartError(f"node {n.cfg.name} ({n.cfg.where}): {exc!r}"))

    def _connect(self, n: SSHNode) -> None:
        c = n.cfg
        client = paramiko.SSHClient()
        if os.path.exists(self.known_hosts):
            client.load_host_keys(self.known_hosts)
        policy = _AcceptNew if self.accept_new else _Refuse
        client.set_missing_host_key_policy(policy(self.known_hosts))
        user = c.user or os.environ.get("USER") or "root"
        where = f"node {c.name} ({user}@{c.host}:{c.port})"
        try:
            client.connect(c.host, port=c.port, username=user, key_filename=c.identity_file,
                           look_for_keys=c.identity_file is None, allow_agent=True,
                           timeout=self.connect_timeout, banner_timeout=self.connect_timeout,
                           auth_timeout=self.connect_timeout)
        except HostKeyError as exc:
            raise HostKeyError(f"{where}: {exc}") from None
        except paramiko.BadHostKeyException as exc:
            raise HostKeyError(
                f"{where}: the host key CHANGED: got {exc.key.get_name()} "
                f"{exc.key.get_fingerprint().hex()}, {self.known_hosts} says "
                f"{exc.expected_key.get_fingerprint().hex()}. This may be an attack or a "
                f"reinstalled host; if you trust the new key, remove the old one with "
                f"`ssh-keygen -R {c.host} -f {self.known_hosts}` and add the new one.") from None
        except paramiko.AuthenticationException as exc:
            key = c.identity_file or "ssh-agent / ~/.ssh/id_*"
            raise NodeStartError(
                f"{where}: authentication failed ({exc}) with key {key}: add its public key "
                f"to ~{user}/.ssh/authorized_keys on {c.host}, or set identity_file: to a "
                f"key that is authorised there (passwords are not supported).") from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            raise NodeStartError(
                f"{where}: cannot connect: {exc}. Check that {c.host} is up and answers SSH "
                f"on port {c.port} (`ssh -p {c.port} {user}@{c.host}` from this machine); "
                f"every node of the cluster file must start, so to run without it, take "
                f"node {c.name} out of the file.") from None
        n.client = client
        n.where = where
        tr = client.get_transport()
        assert tr is not None           # connected
        tr.set_keepalive(max(1, int(self.heartbeat_timeout // 3)))

    def _prefix(self, c: NodeConfig) -> str:
        """Shell lines run before any command: working dir, env, set-up commands."""
        wd = c.working_dir
        qwd = ('"$HOME"/' + shlex.quote(wd[2:])) if wd.startswith("~/") else \
            ('"$HOME"' if wd == "~" else shlex.quote(wd))
        lines = [f"mkdir -p {qwd} && cd {qwd} || exit 96"]
        for k, v in c.env.items():
            lines.append(f"export {k}={shlex.quote(v)}")
        for s in c.setup:
            lines.append(f"{{ {s}\n}} || {{ echo \"taskflow: set-up command failed (exit $?): "
                         f"{s.replace(chr(34), chr(39))}\" >&2; exit 97; }}")
        return "\n".join(lines) + "\n"

    def _run(self, n: SSHNode, cmd: str, timeout: float) -> tuple[int, str, str]:
        """Run a short command (small output); (exit code or -1 on time-out, out, err).

        It blocks on the channel (paramiko's events), never polls: a loop of
        2 ms sleeps per node, 60 nodes starting at once, kept the GIL so busy
        that their probes took seconds each.
        """
        chan = n.client.get_transport().open_session(timeout=timeout)
        chan.settimeout(timeout)
        chan.exec_command(cmd)
        out, err = b"", b""
        try:
            out = chan.makefile("rb").read()          # to EOF (a probe says little)
            err = chan.makefile_stderr("rb").read()
            done = chan.status_event.wait(timeout)
        except socket.timeout:
            done = False
        if not done:
            chan.close()
            return -1, out.decode(errors="replace"), err.decode(errors="replace")
        rc = chan.recv_exit_status()
        chan.close()
        return rc, out.decode(errors="replace"), err.decode(errors="replace")

    def _why(self, n: SSHNode, code: int | None, err: str) -> str:
        """Why the agent did not start, from the shell's exit status and remote stderr."""
        c = n.cfg
        if "No module named" in err and "taskflow" in err or "taskflow" in err and \
                ("ImportError" in err or "ModuleNotFoundError" in err):
            return (f"taskflow is not importable by {c.python}: install it there "
                    f"(`{c.python} -m pip install {DIST_NAME}=={__version__}` or your "
                    f"checkout), add a set-up command that activates a virtualenv that has it, "
                    f"or point python: at such an interpreter")
        # 127: the shell found no such command; a status lost with the channel (paramiko's -1,
        # seen under load) is read from the shell's own words
        lost = code is None or code == -1
        missing = c.python.split()[0] in err and "No such file" in err
        if code == 127 or (code == 126 and "denied" in err) or (lost and missing):
            return (f"the Python interpreter {c.python!r} was not found: set python: to an "
                    f"absolute path of an interpreter on {c.host}")
        if code == 96:
            return f"cannot create or enter working_dir {c.working_dir!r}"
        if code == 97:
            return "a set-up command failed"
        return "the agent did not start" + (f" (exit code {code})" if code is not None else "")

    def _failed(self, n: SSHNode, what: str, wait: float = 3.0) -> NodeStartError:
        """The start failed (``what``): the error with the why, the command, remote stderr."""
        err = self._wait_stderr(n, wait)
        code = n.chan.recv_exit_status() if n.chan is not None and \
            n.chan.exit_status_ready() else None
        return NodeStartError(f"{n.where}: {self._why(n, code, err)} ({what}).\n"
                              f"  command: {n.command}\n  remote stderr: {err or '(empty)'}")

    def _read_cwd(self, n: SSHNode, timeout: float) -> str | None:
        """The working directory the shell printed before it exec'd the agent (None: the
        shell ended first: its stderr and exit status say why)."""
        chan = n.chan
        buf = b""
        deadline = time.time() + timeout
        while CWD_MARK not in buf or not buf.split(CWD_MARK, 1)[1].count(b"\n"):
            chan.settimeout(max(0.01, deadline - time.time()))
            try:
                data = chan.recv_stderr(65536)
            except socket.timeout:
                data = None
            if not data:
                n.stderr += buf
                return None
            buf += data
        before, _, rest = buf.partition(CWD_MARK)
        line, _, after = rest.partition(b"\n")
        n.stderr += before + after        # what set-up commands said, and anything after
        return line.decode(errors="replace")

    def _launch(self, n: SSHNode, config: Hello, timeout: float, adopt: bool = True,
                src: AdoptFrom | None = None) -> None:
        """Start the node's agent (or reach the one an earlier master left: ``src``, or a
        resumed run's :attr:`adopt`); a ``src`` given that refuses raises."""
        c = n.cfg
        n.command = f"{c.python} -m taskflow.node --stdio"
        back, src = src is not None, src if src is not None else self.adopt if adopt and \
            self.adopt is not None and self.adopt.nodes.get(c.name) == ("ssh", c.host) else None
        first = ""
        if src is not None:     # the earlier run's agent, if one waits there; else a new one
            first = (f"{_py(c)} -m taskflow.node --adopt {shlex.quote(src.run_id)} "
                     f"{shlex.quote(c.name)}\nrc=$?; [ $rc = {adoption.NO_SOCKET} ] || exit $rc\n"
                     f"printf {adoption.FRESH.decode()}\n")
        cmd = (self._prefix(c) + f'printf "{CWD_MARK.decode()}%s\\n" "$PWD" >&2\n' + first +
               f"exec {_py(c)} -m taskflow.node --stdio")
        chan = n.client.get_transport().open_session(timeout=self.connect_timeout)
        chan.exec_command(cmd)
        n.chan = chan
        workdir = self._read_cwd(n, self.connect_timeout + 20)
        if workdir is None:
            raise self._failed(n, "its shell ended before the agent started")
        n.workdir = workdir
        chan.settimeout(1.0)
        ours, theirs = socket.socketpair()
        n.sock = theirs
        fd = ours.detach()
        h = NodeHandle(c.name, fd, fd, slots=c.computing_units or 1,
                       memory_gb=c.memory or 0.0, provider=self, shared_fs=c.shared_fs)
        h.address = c.host          # what other nodes and MPI hostfiles use for this node
        h.host = c.host
        h.ssh_port = c.port
        h.ssh_user = c.user
        h.gpus = c.gpus
        h.resources = c.resources
        n.handle = h
        for target in (self._pump_in, self._pump_out):
            t = threading.Thread(target=target, args=(n,), daemon=True,
                                 name=f"taskflow-ssh-{c.name}")
            t.start()
            n.threads.append(t)
        if src is not None and not self._adopted(n, fd, timeout, src):
            if back:        # (its own master reaching it again: tried again later)
                raise NodeStartError(self.refusals.pop())
            self._relaunch(n)
            return self._launch(n, config, timeout, adopt=False)
        data_dir = config.get("data_dir", "")
        cfg: Hello = {**config, "name": c.name, "slots": c.computing_units, "env": dict(c.env),
                      "sample_interval": self.sample_interval}
        if self.adoptable:      # agents outlive a lost master: how it is noticed
            cfg["heartbeat_timeout"] = self.heartbeat_timeout
        if c.memory:
            cfg["memory_gb"] = c.memory
        if c.memory_budget is not None:     # the node's own memory marks (agent.memory)
            cfg["memory_budget"] = c.memory_budget
        if c.memory_pause is not None:
            cfg["memory_pause"] = c.memory_pause
        if not c.shared_fs:     # else: the master's directory and data dir, seen via the shared fs
            data_dir = f"{n.workdir}/taskflow-data/{config.get('run_id', 'run')}"
            cfg.update({"cwd": n.workdir, "data_dir": data_dir})
        describe = f"\n  command: {n.command}"
        try:
            info = h.handshake(cfg, timeout, describe=describe)
        except VersionMismatch as exc:      # the agent answered: taskflow of another version
            raise VersionMismatch(f"{n.where}: {exc}") from None
        except NodeStartError as exc:
            raise self._failed(n, str(exc).split(": ", 1)[-1].split("\n")[0]) from None
        except (OSError, EOFError) as exc:      # the agent was gone before HELLO went out
            raise self._failed(n, f"the agent exited at once: {exc!r}") from None
        h.slots = int(info.get("slots") or 1)
        if not h.memory_gb:
            h.memory_gb = float(info.get("memory_gb") or 1.0)
        n.watch = True
        n.last_rx = time.time()
        if not c.shared_fs:
            from .staging import Stager
            h.stager = Stager(h, n.client, config.get("data_dir", ""), data_dir)

    def _adopted(self, n: SSHNode, fd: int, timeout: float, src: AdoptFrom) -> bool:
        """The earlier run's agent answered through ``taskflow.node --adopt`` and the two
        proved the run's secret to each other (True); False: none waits there (the shell
        starts a new agent on this channel), or it refused (said; a new one is needed)."""
        p = select.poll()
        p.register(fd, select.POLLIN)
        first = os.read(fd, 1) if p.poll(timeout * 1000) else b""
        if first == adoption.FRESH:
            return True             # (a new agent: the HELLO below as always)
        if first == adoption.CONNECTED:
            try:
                handshake_over(fd, src, n.cfg.name, n.where)
                return True
            except (adoption.Refused, OSError) as exc:
                self.refusals.append(str(exc))
        else:
            self.refusals.append(f"{n.where}: no answer from taskflow.node --adopt")
        return False

    def _relaunch(self, n: SSHNode) -> None:
        """Close the node's channel (its adoption failed) for a new agent on a new one."""
        n.closing = True
        if n.sock is not None:
            n.sock.close()
        if n.handle is not None:
            n.handle.close()
        n.chan.close()
        for t in n.threads:
            t.join(2.0)
        n.closing, n.threads, n.stderr, n.handle, n.sock = False, [], bytearray(), None, None

    def reach_again(self, n: SSHNode, src: AdoptFrom, config: Hello, timeout: float) -> bool:
        """One try to reach host ``n``, lost by its link (the comeback's): connect, reach
        the agent waiting there (or start a fresh one); False, ``n`` as it was, when the
        host is not back yet."""
        old = n.handle
        n.threads, n.stderr, n.watch = [], bytearray(), False
        try:
            self._connect(n)
            self._launch(n, config, timeout, src=src)
        except Exception as exc:  # noqa: BLE001 - the host is not back yet
            log.debug("node %s is not back yet: %s", n.cfg.name, exc)
            if n.handle is not old and n.handle is not None:
                self._relaunch(n)
            n.handle = old
            if n.client is not None:
                n.client.close()
            return False
        return True

    def attach(self, sink: NodeSink) -> None:
        """The run started: in an adoptable run, a host whose link fails is tried again."""
        hello, timeout = self.started or ({}, 0.0)
        if self.adoptable:
            self.comeback = Comeback(self, sink, hello, timeout)

    def adoption_refusals(self) -> list[str]:
        return self.refusals

    def nodes_coming(self) -> bool:
        """A host lost by its link is being reached again (within the agents' grace): a run
        with no node left waits for it instead of failing (providers/comeback.py)."""
        return self.comeback is not None and self.comeback.coming()

    def _wait_stderr(self, n: SSHNode, wait: float = 3.0) -> str:
        deadline = time.time() + wait
        while time.time() < deadline and not n.chan.exit_status_ready():
            time.sleep(0.02)
        time.sleep(0.1)
        code = n.chan.recv_exit_status() if n.chan.exit_status_ready() else None
        text = bytes(n.stderr).decode(errors="replace").strip()
        return (text + (f" (exit code {code})" if code is not None else "")).strip()

    # -- the pumps -----------------------------------------------------------
    def _pump_in(self, n: SSHNode) -> None:
        """Channel -> socketpair; also keeps the remote stderr and watches liveness."""
        chan, sock = n.chan, n.sock
        assert sock is not None         # _launch made it before starting the pumps
        reason = "the SSH channel closed (agent exited or host went down)"
        link = True
        try:
            while not n.closing:
                while chan.recv_stderr_ready():
                    n.stderr += chan.recv_stderr(65536)
                    if len(n.stderr) > 65536:
                        del n.stderr[:-65536]
                try:
                    data = chan.recv(1 << 20)
                except socket.timeout:
                    if n.watch and time.time() - n.last_rx > self.heartbeat_timeout:
                        reason = (f"no data from {n.cfg.host} for {self.heartbeat_timeout:g} s "
                                  f"(the agent reports every {self.sample_interval:g} s): "
                                  f"host unreachable or network cut")
                        break
                    continue
                if not data:
                    while chan.recv_stderr_ready():
                        n.stderr += chan.recv_stderr(65536)
                    code = chan.recv_exit_status() if chan.exit_status_ready() else -1
                    if code != -1:
                        reason = f"the agent exited with code {code}"
                        link = False        # (an agent that ended is not reached again)
                    else:
                        reason = ("the SSH connection closed without an exit status (the host "
                                  "crashed, or its sshd was killed)")
                    break
                n.last_rx = time.time()
                sock.sendall(data)
                n.last_rx = time.time()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            reason = f"SSH connection failed: {exc!r}"
        if n.closing:
            return
        if n.handle is not None:
            tail = bytes(n.stderr[-2000:]).decode(errors="replace").strip()
            n.handle.lost_reason = f"{reason}" + (f"; remote stderr: {tail}" if tail else "")
        if link and self.comeback is not None:
            self.comeback.lost(n, "its link failed")   # (first: the run sees it coming)
        self._drop(n)

    def _pump_out(self, n: SSHNode) -> None:
        """Socketpair -> channel."""
        chan, sock = n.chan, n.sock
        assert sock is not None         # _launch made it before starting the pumps
        try:
            while True:
                data = sock.recv(1 << 20)
                if not data:
                    break
                view = memoryview(data)
                while view:
                    try:
                        sent = chan.send(view)
                    except socket.timeout:
                        if n.closing:
                            return
                        continue
                    if sent == 0:
                        raise EOFError("channel closed")
                    view = view[sent:]
        except (OSError, EOFError, paramiko.SSHException):
            pass
        try:
            chan.shutdown_write()
        except (OSError, EOFError, paramiko.SSHException):
            pass

    def _drop(self, n: SSHNode) -> None:
        assert n.sock is not None       # called by a pump
        try:
            n.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            n.client.close()
        except Exception:  # noqa: BLE001
            pass

    # -- the end -------------------------------------------------------------
    def kill(self, handle: NodeHandle) -> None:
        """SIGKILL the node's agent remotely (tests of node loss)."""
        for n in self.nodes:
            if n.handle is handle and n.client is not None:
                pid = handle.info.get("pid")
                if pid:
                    try:
                        self._run(n, f"kill -9 {int(pid)}", 10)
                    except Exception:  # noqa: BLE001
                        pass

    def dismiss_lost(self, run_id: str, secret: str) -> None:
        """The run ends well: an agent of a host it lost (a cut link) may wait for a resumed
        master (agent/orphan.py); reach it again, prove the run's secret, SHUTDOWN it."""
        if self.comeback is not None:
            self.comeback.stop()
        me = AdoptFrom(run_id, secret, {})
        for n in self.nodes:
            if n.handle is None or n.handle.alive or n.closing:
                continue
            c = n.cfg
            try:
                client = paramiko.SSHClient()
                if os.path.exists(self.known_hosts):
                    client.load_host_keys(self.known_hosts)
                client.set_missing_host_key_policy(_Refuse(self.known_hosts))
                client.connect(c.host, port=c.port, username=c.user or "root",
                               key_filename=c.identity_file, timeout=self.connect_timeout,
                               banner_timeout=self.connect_timeout,
                               auth_timeout=self.connect_timeout,
                               look_for_keys=c.identity_file is None)
                tr = client.get_transport()
                assert tr is not None       # connected
                chan = tr.open_session(timeout=self.connect_timeout)
                chan.settimeout(self.connect_timeout)
                chan.exec_command(f"{_py(c)} -m taskflow.node --adopt "
                                  f"{shlex.quote(run_id)} {shlex.quote(c.name)}")
                ours, theirs = socket.socketpair()
                if chan.recv(1) == adoption.CONNECTED:
                    threading.Thread(target=relay, args=(chan, theirs), daemon=True).start()
                    handshake_over(ours.fileno(), me, c.name, f"node {c.name}")
                    ours.sendall(P.encode(M.SHUTDOWN, None))
                    time.sleep(0.2)
                ours.close()
                client.close()
            except Exception as exc:  # noqa: BLE001 - it ends after its grace all the same
                log.debug("node %s: its agent was not reached at the end: %r", c.name, exc)

    def stop(self, timeout: float = 5.0) -> None:
        if self.comeback is not None:
            self.comeback.stop()
        for n in self.nodes:
            n.closing = n.handle is not None
            if n.handle is not None:
                try:
                    os.close(n.handle.rfd)       # EOF to the agent: it exits
                except OSError:
                    pass
        for n in self.nodes:
            chan = n.chan
            if chan is not None:
                deadline = time.time() + timeout
                while not chan.exit_status_ready() and time.time() < deadline \
                        and n.client.get_transport() and n.client.get_transport().is_active():
                    time.sleep(0.01)
            st = n.handle.stager if n.handle is not None else None
            if st is not None:
                st.close(cleanup=True)
            n.closing = True
            for t in n.threads:
                t.join(1.0)
            if n.sock is not None:
                n.sock.close()
            if n.client is not None:
                n.client.close()
        self.nodes = [SSHNode(n.cfg) for n in self.nodes]
