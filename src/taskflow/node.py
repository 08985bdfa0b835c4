"""``python -m taskflow.node --stdio``: run a node agent on this host."""
from __future__ import annotations


def main(argv: list[str] | None = None) -> None:
    import sys
    if (sys.argv[1:] if argv is None else argv) == ["--stdio"]:
        # how every master starts its agents: no parser to load on the way (~2 ms)
        from .agent.serve import serve_stdio
        serve_stdio()
        return
    import argparse
    ap = argparse.ArgumentParser(prog="python -m taskflow.node",
                                 description="taskflow node agent (started by the master)")
    ap.add_argument("--stdio", action="store_true", help="speak the protocol on stdin/stdout")
    ap.add_argument("--connect", metavar="HOST:PORT", default=None,
                    help="dial back to the master over TCP (secret in "
                         "TASKFLOW_DIALBACK_SECRET_FILE or TASKFLOW_DIALBACK_SECRET)")
    ap.add_argument("--adopt", nargs=2, metavar=("RUN_ID", "NODE"), default=None,
                    help="relay stdin/stdout to the agent of that run and node waiting here "
                         "for a resumed master (taskflow.wire.adoption)")
    args = ap.parse_args(argv)
    if args.adopt:
        from .agent.serve import relay
        relay(*args.adopt)
        return
    if args.connect:
        from .agent.serve import serve_connect
        serve_connect(args.connect)
        return
    from .agent.serve import serve_stdio
    serve_stdio()


if __name__ == "__main__":
    main()
