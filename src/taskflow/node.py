"""``python -m taskflow.node --stdio``: run a node agent on this host."""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m taskflow.node",
                                 description="taskflow node agent (started by the master)")
    ap.add_argument("--stdio", action="store_true", help="speak the protocol on stdin/stdout")
    ap.parse_args(argv)
    from .nodes.agent import serve_stdio
    serve_stdio()


if __name__ == "__main__":
    main()
