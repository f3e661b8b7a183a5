"""``twinsched ui``: the run explorer over the scenario store, a read-only web page.

FastAPI and uvicorn are imported inside the command (start-up stays light).
"""

from __future__ import annotations

from typing import Annotated

import typer

from twinsched.cli.console import error_exit
from twinsched.cli.options import DbOpt, ModelsDirOpt, int_opt
from twinsched.cli.security import (
    RequireReadOpt,
    SslCaOpt,
    SslCertOpt,
    SslKeyOpt,
    TokensDbOpt,
    scheme,
    tls_kwargs,
    token_opt,
    verifier,
)
from twinsched.errors import TwinschedError

TOKEN_ENV = "TWINSCHED_UI_TOKEN"


def ui_command(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, int_opt("Port to bind.", 1, 65535)] = 8383,
    db: DbOpt = None,
    models_dir: ModelsDirOpt = None,
    token: Annotated[str | None, token_opt(TOKEN_ENV)] = None,
    tokens_db: TokensDbOpt = None,
    require_read_token: RequireReadOpt = False,
    ssl_certfile: SslCertOpt = None,
    ssl_keyfile: SslKeyOpt = None,
    ssl_ca_certs: SslCaOpt = None,
) -> None:
    """Browse, filter and compare the stored runs, open sweep reports and the registered
    models' cards, in a web page (read-only)."""
    try:
        import uvicorn

        from twinsched.explorer.app import create_app
        from twinsched.store import list_runs

        tls = tls_kwargs(ssl_certfile, ssl_keyfile, ssl_ca_certs)
        tokens = verifier([token or ""], tokens_db, require_read_token)
        list_runs(db, limit=1)  # the store answers (and is migrated) before serving
        application = create_app(db, models_dir, tokens, require_read_token)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    typer.echo(f"run explorer at {scheme(tls)}://{host}:{port}/", err=True)
    uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False, **tls)
