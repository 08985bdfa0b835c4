"""``taskflow serve``: the REST service (taskflow.serve; needs the ``serve`` extra)."""
from __future__ import annotations

import click

from .. import diagnostics
from .._version import install_hint
from ..netguard.limits import MAX_BODY
from .options import examples, retired


@click.command(epilog=examples("taskflow serve                   # 127.0.0.1:8765, token in its workdir",
                               "taskflow serve --port 0 --max-runs 4"))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback lets other machines in (with the "
                   "token).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port (0: any free one; the URL is printed and kept in service.json).")
@retired("-p", "--port", "-p is --partition in taskflow submit, as in sbatch", takes_value=True)
@click.option("--workdir", type=click.Path(file_okay=False), default=".taskflow/service",
              show_default=True, help="Where the service keeps its runs, database and token.")
@click.option("--max-runs", type=click.IntRange(1, 1024), default=2, show_default=True,
              help="Runs going on at once; more wait in a queue (priority, then age).")
@click.option("--max-queued", type=click.IntRange(0, 100000), default=1000, show_default=True,
              help="Runs that may wait; more are refused with 429.")
@click.option("--max-body", type=click.IntRange(1024, 2**30), default=MAX_BODY,
              show_default=True, help="Largest request body in bytes (413 beyond).")
@click.option("--max-streams", type=click.IntRange(1, 1000), default=32, show_default=True,
              help="Open event / log streams at once (503 beyond).")
@click.option("--new-token", is_flag=True, help="Make a new token instead of the kept one.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"],
                                               case_sensitive=False), default="warning",
              show_default=True)
def serve(host: str, port: int, workdir: str, max_runs: int, max_queued: int, max_body: int,
          max_streams: int, new_token: bool, log_level: str) -> None:
    """Serve workflow runs over a JSON API (/api/v1) until interrupted."""
    diagnostics.setup(log_level)
    try:
        from ..serve.service import ServiceBusy, serve as run_service
    except ImportError as exc:
        raise click.ClickException(f"taskflow serve needs FastAPI and uvicorn: "
                                   f"{install_hint('serve')} ({exc})") from None
    try:
        run_service(host, port, workdir, max_runs, max_queued, max_body, max_streams, new_token)
    except ServiceBusy as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"could not serve on {host}:{port}: {exc}") from None
