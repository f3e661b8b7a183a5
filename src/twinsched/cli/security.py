"""The security options every service command shares (``docs/security.md``): TLS with the
scheduler service's names (``--ssl-certfile``, ``--ssl-keyfile``, ``--ssl-ca-certs``),
``--require-read-token`` (or ``$TWINSCHED_REQUIRE_READ_TOKEN=1``) and ``--tokens-db`` (the
twin's history database, whose issued tokens the service then accepts). Light at import:
the checks import ``twin.auth`` inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from twinsched.twin.auth import TokenVerifier

READ_ENV = "TWINSCHED_REQUIRE_READ_TOKEN"
TOKENS_DB_ENV = "TWINSCHED_TOKENS_DB"

SslCertOpt = Annotated[Path | None, typer.Option(help="TLS certificate (HTTPS).")]
SslKeyOpt = Annotated[Path | None, typer.Option(help="TLS key.")]
SslCaOpt = Annotated[
    Path | None, typer.Option(help="CA of client certificates: mutual TLS (required).")
]
RequireReadOpt = Annotated[
    bool,
    typer.Option(
        "--require-read-token",
        envvar=READ_ENV,
        help=f"Reads need a token too (read, write or admin role) (env {READ_ENV}).",
    ),
]
TokensDbOpt = Annotated[
    str | None,
    typer.Option(
        envvar=TOKENS_DB_ENV,
        help="Accept the tokens issued in this database (twinsched tokens issue --db; the "
        f"twin's history database) (env {TOKENS_DB_ENV}).",
    ),
]


def tls_kwargs(
    certfile: Path | None, keyfile: Path | None, ca_certs: Path | None
) -> dict[str, Any]:
    """uvicorn's TLS keyword arguments, the files checked first (``TlsError`` names the
    option); empty for plain HTTP."""
    from twinsched.twin.auth.tls import tls_files

    files = tls_files(certfile, keyfile, ca_certs)
    return files.uvicorn() if files is not None else {}


def token_opt(env: str) -> Any:
    """``--token``: a service's own token (an admin of every namespace), from ``env``."""
    return typer.Option(envvar=env, help=f"An admin token (env {env}).")


def verifier(
    legacy: list[str], tokens_db: str | None, require_read_token: bool = False
) -> TokenVerifier:
    """A service's verifier: its own token(s), as admin, and the tokens of ``tokens_db``;
    ``require_read_token`` without any of them is refused (no token could ever read)."""
    from twinsched.errors import TwinschedError
    from twinsched.twin.auth import TokenVerifier

    store = None
    if tokens_db:  # the store (its extra) only when tokens are kept in one
        from twinsched.store.db import engine_for
        from twinsched.store.history import TokenStore

        store = TokenStore(engine_for(tokens_db))
    found = TokenVerifier(legacy, store)
    if require_read_token and not found.enabled:
        raise TwinschedError("--require-read-token needs --token or --tokens-db")
    return found


def scheme(tls: dict[str, Any]) -> str:
    """``https`` with TLS, else ``http`` (for the URL a service prints)."""
    return "https" if tls else "http"
