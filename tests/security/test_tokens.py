"""Tokens stored hashed, verified in constant time, revoked; the audit log append-only; the
``twinsched tokens`` commands. Every store test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.store.db import engine_for
from twinsched.store.history import AuditEntry, AuditLog, TokenNotFoundError, TokenStore
from twinsched.twin.auth import Role, TokenVerifier, new_token
from twinsched.twin.auth.tokens import AuthError, check_namespace, parse_role


def test_a_token_is_stored_hashed_and_checked(db: str) -> None:
    store = TokenStore(engine_for(db))
    token, row = new_token("team a", Role.write, ["team-a", "team-b"], "test")
    store.insert(row)
    secret = token.split("_", 2)[2]  # tws_ID_SECRET; the secret itself may hold "_"
    with store.engine.connect() as conn:
        dumped = repr(conn.execute(sa.text("SELECT * FROM twin_tokens")).all())
    assert secret not in dumped and token not in dumped
    verifier = TokenVerifier(store=store, cache_s=0)
    who = verifier.verify(token)
    assert who is not None and who.role is Role.write and who.token_id == row.id
    assert who.namespaces == {"team-a", "team-b"} and who.sees("team-a") and not who.sees(None)
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert verifier.verify(wrong) is None
    assert verifier.verify(f"tws_{'0' * 12}_{secret}") is None  # an unknown id
    store.revoke(row.id)
    assert verifier.verify(token) is None
    assert store.list() == [] and [t.id for t in store.list(revoked=True)] == [row.id]
    with pytest.raises(TokenNotFoundError, match="no token has the id 'nope'"):
        store.revoke("nope")


def test_a_revocation_counts_once_the_cache_time_is_over(db: str) -> None:
    store = TokenStore(engine_for(db))
    token, row = new_token("cached", Role.read, ["*"], "test")
    store.insert(row)
    verifier = TokenVerifier(store=store, cache_s=3600)
    assert verifier.verify(token) is not None
    store.revoke(row.id)
    assert verifier.verify(token) is not None  # still cached: the documented window
    verifier.cache_s = 0
    assert verifier.verify(token) is None


def test_the_legacy_token_is_an_admin_of_every_namespace() -> None:
    verifier = TokenVerifier(["legacy-token-of-the-twin"])
    who = verifier.verify("legacy-token-of-the-twin")
    assert who is not None and who.role is Role.admin and who.sees("any-namespace")
    assert verifier.verify("legacy-token-of-the-twiN") is None
    assert not TokenVerifier().enabled and verifier.enabled


def test_the_audit_log_is_append_only_in_the_database(db: str) -> None:
    log = AuditLog(engine_for(db))
    for status in (200, 403):
        log.append(AuditEntry(time=1.0, who="w", method="PUT", path="/x", status=status))
    assert [(e.id, e.status) for e in log.read()] == [(1, 200), (2, 403)]
    assert [e.id for e in log.read(after=1)] == [2]
    for statement in ("UPDATE twin_audit SET who = 'someone else'", "DELETE FROM twin_audit"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), log.engine.begin() as conn:
            conn.execute(sa.text(statement))
    assert [e.who for e in log.read()] == ["w", "w"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_role("root"), "role: 'root' is not one of read, write, admin"),
        (lambda: check_namespace("Team_A"), "namespace: 'Team_A' is not a namespace"),
        (lambda: new_token("", Role.read, ["a"], "t"), "name: '' must be 1-128"),
        (lambda: new_token("x", Role.read, [], "t"), "namespaces: give at least one"),
    ],
)
def test_bad_values_name_the_field(call: object, message: str) -> None:
    with pytest.raises(AuthError, match=message):
        call()  # type: ignore[operator]


def test_the_tokens_commands_issue_list_and_revoke(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    runner = CliRunner()
    issued = runner.invoke(app, ["tokens", "issue", "ops team", "--role", "admin",
                                 "--namespace", "team-a", "--db", url])  # fmt: skip
    assert issued.exit_code == 0, issued.output
    token = issued.stdout.strip().splitlines()[-1]
    assert token.startswith("tws_")
    store = TokenStore(engine_for(url))
    (row,) = store.list()
    assert (row.name, row.role, row.namespaces) == ("ops team", "admin", ("team-a",))
    listed = runner.invoke(app, ["tokens", "list", "--db", url])
    assert listed.exit_code == 0 and row.id in listed.stdout
    assert token.split("_", 2)[2] not in listed.output
    assert TokenVerifier(store=store, cache_s=0).verify(token) is not None
    revoked = runner.invoke(app, ["tokens", "revoke", row.id, "--db", url])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert TokenVerifier(store=store, cache_s=0).verify(token) is None
    bad = runner.invoke(app, ["tokens", "issue", "x", "--role", "root", "--db", url])
    assert bad.exit_code == 2 and "role: 'root'" in bad.output
    gone = runner.invoke(app, ["tokens", "revoke", "nope", "--db", url])
    assert gone.exit_code == 2 and "no token has the id 'nope'" in gone.output
    audit = AuditLog(engine_for(url)).read()
    assert [e.path.split(" ")[1] for e in audit] == ["issue", "revoke"]
    assert {e.who for e in audit} == {f"cli:{getpass.getuser()}"}
