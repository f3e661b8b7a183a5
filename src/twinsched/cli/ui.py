"""``twinsched ui``: the run explorer over the scenario store, a read-only web page.

FastAPI and uvicorn are imported inside the command (start-up stays light).
"""

from __future__ import annotations

from typing import Annotated

import typer

from twinsched.cli.console import error_exit
from twinsched.cli.options import DbOpt, ModelsDirOpt, int_opt
from twinsched.errors import TwinschedError


def ui_command(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, int_opt("Port to bind.", 1, 65535)] = 8383,
    db: DbOpt = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Browse, filter and compare the stored runs, open sweep reports and the registered
    models' cards, in a web page (read-only)."""
    try:
        import uvicorn

        from twinsched.explorer.app import create_app
        from twinsched.store import list_runs

        list_runs(db, limit=1)  # the store answers (and is migrated) before serving
        application = create_app(db, models_dir)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    typer.echo(f"run explorer at http://{host}:{port}/", err=True)
    uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False)
