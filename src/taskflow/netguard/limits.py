"""The bounds of a server reachable by strangers, each defined once (the service's
``--max-body`` default, the monitor's body limit and the guard's deadlines and counts
are these)."""
from __future__ import annotations

HEAD_TIMEOUT = 10.0      # s from a connection (or a response's end) to a request's full head
BODY_TIMEOUT = 30.0      # s from a request's head to its full body
SEND_TIMEOUT = 30.0      # s a response may wait for the client to read it (its output stalled)
KEEP_ALIVE = 5.0         # s an idle connection stays open after a response
PER_CLIENT = 32          # waiting connections (head, body or idle) of one address
MAX_WAITING = 256        # waiting connections overall
PER_CLIENT_OPEN = 64     # open connections of one address, whatever their state
MAX_OPEN = 512           # open connections overall, whatever their state
MAX_BODY = 4 * 2**20     # bytes of a request's body (413 beyond); read only after the token
SUMMARY_EVERY = 60.0     # s between two log lines about one address's refused connections
LISTEN_QUEUE = 1024      # connections the kernel holds until they are accepted
ACCEPT_BATCH = 64        # connections the event loop accepts before it serves the others
