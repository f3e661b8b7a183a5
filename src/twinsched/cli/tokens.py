"""``twinsched tokens issue|list|revoke``: the tokens of the twin (and of the services that
read its database with ``--tokens-db``), with a role and namespaces (``docs/security.md``).

A token is printed once, by ``issue``, alone on stdout; the database keeps only its salted
scrypt hash. Each command is appended to the audit log of that database.
"""

from __future__ import annotations

import getpass
import os
import time
from typing import Annotated

import typer

from twinsched.cli.console import expected_errors

app = typer.Typer(
    help="Tokens with a role (read, write, admin) and namespaces: issue, list, revoke.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The twin's history database (default: $TWINSCHED_TWIN_DB, else the store's: "
        "$TWINSCHED_DB, else the user data folder).",
    ),
]


def _stores(db: str | None) -> tuple[object, object]:
    from twinsched.store.db import engine_for
    from twinsched.store.history import AuditLog, TokenStore

    engine = engine_for(db or os.environ.get("TWINSCHED_TWIN_DB") or None)
    return TokenStore(engine), AuditLog(engine)


def _audit(log: object, what: str, namespace: str | None = None) -> None:
    from twinsched.store.history import AuditEntry, AuditLog

    assert isinstance(log, AuditLog)
    who = f"cli:{getpass.getuser()}"
    log.append(AuditEntry(time=time.time(), who=who, method="CLI", path=what, status=0,
                          namespace=namespace))  # fmt: skip


@app.command("issue")
def issue(
    name: Annotated[str, typer.Argument(help="Who holds it (a person, a team, a service).")],
    role: Annotated[str, typer.Option(help="read, write or admin.")] = "read",
    namespace: Annotated[
        list[str] | None,
        typer.Option(help="A namespace it may use (repeat; '*': every namespace)."),
    ] = None,
    db: Db = None,
) -> None:
    """Issue a token and print it (once: only its hash is stored)."""
    from twinsched.store.history import TokenStore
    from twinsched.twin.auth import new_token
    from twinsched.twin.auth.tokens import parse_role

    with expected_errors():
        token, row = new_token(name, parse_role(role), namespace or ["default"],
                               f"cli:{getpass.getuser()}")  # fmt: skip
        store, log = _stores(db)
        assert isinstance(store, TokenStore)
        store.insert(row)
        _audit(log, f"tokens issue {row.id} ({row.role}, {','.join(row.namespaces)})")
    typer.echo(f"token {row.id}: {row.name}, {row.role}, namespaces {','.join(row.namespaces)}",
               err=True)  # fmt: skip
    typer.echo(token)


@app.command("list")
def list_tokens(
    db: Db = None,
    revoked: Annotated[bool, typer.Option("--revoked", help="Also the revoked ones.")] = False,
) -> None:
    """List the tokens (id, name, role, namespaces, issued, revoked); never a secret."""
    from twinsched.store.history import TokenStore

    with expected_errors():
        store, _ = _stores(db)
        assert isinstance(store, TokenStore)
        rows = store.list(revoked=revoked)
    typer.echo("id\tname\trole\tnamespaces\tissued\trevoked")
    for row in rows:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(row.created))
        gone = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(row.revoked)) if row.revoked else "-"
        typer.echo(f"{row.id}\t{row.name}\t{row.role}\t{','.join(row.namespaces)}\t{when}\t{gone}")


@app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (twinsched tokens list).")],
    db: Db = None,
) -> None:
    """Revoke a token: services refuse it within their cache time (5 s)."""
    from twinsched.store.history import TokenStore

    with expected_errors():
        store, log = _stores(db)
        assert isinstance(store, TokenStore)
        row = store.revoke(token_id)
        _audit(log, f"tokens revoke {row.id}")
    typer.echo(f"token {row.id} ({row.name}) revoked")
