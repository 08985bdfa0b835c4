"""A dial-back agent whose master is lost: it dials the resumed master when one says where.

A Slurm agent (batch or pilot) reached its master by dialling back
(:mod:`.dialback`); no new master can reach it, so it looks for one. Its
HELLO named a file on the shared filesystem (``Hello.adopt_rejoin``, in the
run's Slurm directory); while it waits (:mod:`.orphan`) it looks at that file
every :data:`POLL` seconds (one ``stat``). A resumed master writes it (mode
0600): its dial-back address and the path of its dial-back secret file. The
agent then dials that address with the ordinary dial-back handshake
(:mod:`taskflow.wire.dialback`: TLS, the *new* run's secret, its meta saying
``adopt``: the earlier run and the node), and on the same connection, before it
reads any frame, asks the master for the *earlier* run's proof bound to (run,
node) (:func:`taskflow.wire.adoption.agent_side`): only that run's resumed
master passes. Then it is adopted as a local or SSH agent is
(:meth:`~.orphan.Orphan._take`: HELLO, READY with the tasks it kept).

A file it could not use (a master that failed a proof, an address that does not
answer) is not tried again until it changes.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ..wire import adoption
from ..wire import messages as M
from ..wire.dialback import AUTH_TIMEOUT
from .orphan import first_frame, say

if TYPE_CHECKING:
    from ..wire.tlschannel import TlsChannel
    from .orphan import Orphan

POLL = 1.0      # s between looks at the rejoin file while the agent waits for a master


class Rejoin:
    """The rejoin file an orphaned dial-back agent watches."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.next_look = 0.0
        self.tried: tuple[int, int, int] | None = None   # the file last tried (ino, mtime, size)

    @staticmethod
    def named(hello: M.Hello) -> Rejoin | None:
        """The rejoin file the master's HELLO names (Slurm dial-back agents), if any."""
        path = hello.get("adopt_rejoin")
        return Rejoin(path) if path else None

    def due(self) -> float:
        """Seconds until the next look."""
        return max(0.0, self.next_look - time.time())

    def look(self, orphan: Orphan, now: float) -> None:
        """One look; a new file: dial its master and be adopted, or say why not."""
        if now < self.next_look:
            return
        self.next_look = now + POLL
        try:
            st = os.stat(self.path)
        except OSError:
            return
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        if sig == self.tried:
            return
        self.tried = sig
        ag = orphan.agent
        try:
            chan, hello = self._dial(orphan)
        except Exception as exc:  # noqa: BLE001 - a master that fails never stops the agent
            say(f"taskflow.node: {ag.name}: did not rejoin the master named in "
                 f"{self.path}: {exc}")
            return
        orphan._take(chan, hello)
        ag.rejoin = Rejoin.named(hello)     # (where the master after this one will say)

    def _dial(self, orphan: Orphan) -> tuple[TlsChannel, M.Hello]:
        import json

        from ..wire.tlschannel import TlsChannel
        from .dialback import agent_meta, connect     # (ssl: only when dialling)
        ag = orphan.agent
        with open(self.path) as f:
            where = json.load(f)
        address, secret_file = str(where["address"]), str(where["secret_file"])
        with open(secret_file) as f:
            secret = f.read().strip()
        meta = dict(agent_meta(), adopt={"run": ag.adopt_run, "node": ag.name})
        sock = connect(address, secret, meta, timeout=AUTH_TIMEOUT)
        try:
            sock.setblocking(False)
            # the earlier run's proof, bound to (run, node), before any frame is read
            adoption.agent_side(sock, ag.adopt_secret, ag.adopt_run, ag.name)
            chan = TlsChannel(sock)
            op, hello = first_frame(sock, chan)
            if op != M.HELLO:
                raise adoption.Refused("no HELLO after the handshake")
        except BaseException:
            sock.close()
            raise
        return chan, hello

