"""An orphaned dial-back agent dials the resumed master that its run's file names.

A Slurm agent (batch or pilot) reached its master by dialling back
(:mod:`.dialback`); no resumed master can reach it, so to be adopted it dials
again. Its HELLO named a file on the shared filesystem (``Hello.adopt_file``,
in the run's Slurm directory: the wire's and the provider's name for it);
while it waits (:mod:`.orphan`) it looks at that file every :data:`POLL`
seconds (one ``stat``). A resumed master writes it (mode 0600): its dial-back
address and the path of its dial-back secret file. The agent then dials that
address with the ordinary dial-back handshake (:mod:`taskflow.wire.dialback`:
TLS, the *new* run's secret, its meta saying ``adopt``: the earlier run and
the node), and on the same connection, before it reads any frame, asks the
master for the *earlier* run's proof bound to (run, node)
(:func:`taskflow.wire.adoption.agent_side`): only that run's resumed master
passes. Then it is adopted as a local or SSH agent is
(:meth:`~.agent.Agent.attach`: HELLO, READY with the tasks it kept).

A file it could not use (a master that failed a proof, an address that does not
answer) is not tried again until it changes.

(Named for what the agent does, dialling again; "adopt" is what the resumed
master does, and "rejoin" a node its running master reaches again.)
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ..wire import adoption
from ..wire import messages as M
from ..wire.dialback import AUTH_TIMEOUT
from .link import MasterLink, first_frame, say

if TYPE_CHECKING:
    from ..wire.tlschannel import TlsChannel

POLL = 1.0      # s between looks at the file while the agent waits for a master


class Redial:
    """The file an orphaned dial-back agent watches for a resumed master's address."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.next_look = 0.0
        self.tried: tuple[int, int, int] | None = None   # the file last tried (ino, mtime, size)

    @staticmethod
    def named(hello: M.Hello) -> Redial | None:
        """The file the master's HELLO names (Slurm dial-back agents), if any."""
        path = hello.get("adopt_file")
        return Redial(path) if path else None

    def due(self) -> float:
        """Seconds until the next look."""
        return max(0.0, self.next_look - time.time())

    def look(self, now: float, lost: MasterLink, node: str) -> tuple[TlsChannel, M.Hello] | None:
        """One look; a new file: dial its master and return its stream and HELLO (the
        earlier run's identity, ``lost``'s, proved for ``node``), or say why not."""
        if now < self.next_look:
            return None
        self.next_look = now + POLL
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        if sig == self.tried:
            return None
        self.tried = sig
        try:
            return self._dial(lost, node)
        except Exception as exc:  # noqa: BLE001 - a master that fails never stops the agent
            say(f"taskflow.node: {node}: did not rejoin the master named in "
                f"{self.path}: {exc}")
            return None

    def _dial(self, lost: MasterLink, node: str) -> tuple[TlsChannel, M.Hello]:
        import json

        from ..wire.tlschannel import TlsChannel
        from .dialback import agent_meta, connect     # (ssl: only when dialling)
        with open(self.path) as f:
            where = json.load(f)
        address, secret_file = str(where["address"]), str(where["secret_file"])
        with open(secret_file) as f:
            secret = f.read().strip()
        meta = dict(agent_meta(), adopt={"run": lost.run_id, "node": node})
        sock = connect(address, secret, meta, timeout=AUTH_TIMEOUT)
        try:
            sock.setblocking(False)
            # the earlier run's proof, bound to (run, node), before any frame is read
            adoption.agent_side(sock, lost.secret, lost.run_id, node)
            chan = TlsChannel(sock)
            op, hello = first_frame(sock, chan)
            if op != M.HELLO:
                raise adoption.Refused("no HELLO after the handshake")
        except BaseException:
            sock.close()
            raise
        return chan, hello
