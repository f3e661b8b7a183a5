"""``twinsched agent run|check FILE``: agents from an agent file, as a service.

``run`` fires the file's agents on the wall clock and answers ``/healthz`` and ``/metrics``
on ``--host``/``--port``; SIGTERM or Ctrl-C stops it (exit 0). ``check`` validates the file
and builds its agents without sending a request (exit 2 with every bad field named). Both
go through the same :func:`~twinsched.learning.agents.loader.open_agents`, so ``run``
refuses exactly what ``check`` refuses, with the same message.
"""

from __future__ import annotations

import logging
import math
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from twinsched.cli.console import error_exit, expected_errors
from twinsched.cli.options import float_opt, port_opt
from twinsched.cli.security import (
    RequireReadOpt,
    SslCaOpt,
    SslCertOpt,
    SslKeyOpt,
    TokensDbOpt,
    scheme,
    token_opt,
    verifier,
)
from twinsched.errors import TwinschedError

app = typer.Typer(
    help="Agents from an agent file (sensors, rules, actuators, triggers), as a service.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

AgentFileArg = Annotated[
    Path, typer.Argument(help="the agent file (TOML)", exists=True, dir_okay=False)
]
MOST_S = 1e9
TOKEN_ENV = "TWINSCHED_AGENT_TOKEN"


@app.command("check")
def check(file: AgentFileArg) -> None:
    """Validate FILE and build its agents (no request is sent)."""
    from twinsched.learning.agents.loader import open_agents

    with expected_errors():
        client, agents = open_agents(file)
    client.close()
    for agent in agents:
        typer.echo(f"{agent.name}: {agent.trigger!r}, {type(agent.rule).__name__}, "
                   f"{type(agent.actuator).__name__}")  # fmt: skip
    typer.echo(f"{file}: {len(agents)} agent(s), valid")


@app.command("run")
def run(
    file: AgentFileArg,
    host: Annotated[str, typer.Option(help="address for /healthz and /metrics")] = "127.0.0.1",
    port: Annotated[int, port_opt("port for /healthz and /metrics (0: any free one)")] = 9465,
    duration: Annotated[
        float | None,
        float_opt("stop after this many seconds (default: never)", 0, MOST_S, open_lo=True),
    ] = None,
    log_level: Annotated[str, typer.Option(help="critical, error, warning, info, debug")] = "info",
    token: Annotated[str | None, token_opt(TOKEN_ENV)] = None,
    tokens_db: TokensDbOpt = None,
    require_read_token: RequireReadOpt = False,
    ssl_certfile: SslCertOpt = None,
    ssl_keyfile: SslKeyOpt = None,
    ssl_ca_certs: SslCaOpt = None,
) -> None:
    """Run FILE's agents on the wall clock, serving /healthz and /metrics."""
    from twinsched.learning.agents.loader import open_agents
    from twinsched.learning.agents.service import AgentService

    if log_level.upper() not in ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG"):
        raise error_exit(ValueError(f"--log-level {log_level!r}: critical..debug"))
    from twinsched.twin.auth.tls import tls_files

    with expected_errors():
        tls = tls_files(ssl_certfile, ssl_keyfile, ssl_ca_certs)
        tokens = verifier([token or ""], tokens_db, require_read_token)
        client, agents = open_agents(file)
    service = AgentService(agents, verifier=tokens, read_required=require_read_token, tls=tls)
    try:
        bound = service.serve(host, port)
    except OSError as exc:
        client.close()
        raise error_exit(exc, f"--port {port}: ") from exc
    handler = _log_to_stderr(log_level.upper())
    typer.echo(f"agent: {len(service.agents)} agent(s) from {file}; "
               f"{scheme({'tls': tls} if tls else {})}://{host}:{bound}/healthz and /metrics",
               err=True)  # fmt: skip
    signal.signal(signal.SIGTERM, _interrupt)
    until = math.inf if duration is None else time.time() + duration
    try:
        service.run(until)
    except KeyboardInterrupt:
        typer.echo("agent: stopping", err=True)
    except TwinschedError as exc:
        raise error_exit(exc) from exc
    finally:
        service.shutdown()
        client.close()
        logging.getLogger().removeHandler(handler)  # its stream ends with the command


def _log_to_stderr(level: str) -> logging.Handler:
    """A handler of the root logger on this command's stderr (removed when it ends)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    return handler


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt
