"""A new SQLite store is a copy of the cache's empty store at the head (``store/template.py``):
the same schema, triggers, pragmas and revision as one migrated, and no Alembic to import."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from twinsched.store import db as store_db
from twinsched.traces.cachedir import ENV_VAR, OFF

PRAGMAS = ("journal_mode", "page_size", "user_version", "auto_vacuum", "encoding")


def described(path: Path) -> list[tuple[object, ...]]:
    """Every schema object, pragma, revision and table's row count of the file at ``path``."""
    with sqlite3.connect(path) as conn:
        rows = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        tables = [n for t, n, _, _ in rows if t == "table"]
        rows += [(k, *conn.execute(f"PRAGMA {k}").fetchone()) for k in PRAGMAS]
        rows += [("revision", *r) for r in conn.execute("SELECT * FROM alembic_version")]
        rows += [(t, *conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()) for t in tables]
    return rows


def opened(path: Path) -> Path:
    store_db.engine_for(f"sqlite:///{path}").dispose()
    return path


def test_a_copied_store_is_the_migrated_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, OFF)
    migrated = described(opened(tmp_path / "migrated.db"))
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    first = described(opened(tmp_path / "first.db"))  # builds the template, then copies it
    assert len(list((tmp_path / "cache").glob("store-*.sqlite"))) == 1
    assert first == migrated
    assert described(opened(tmp_path / "second.db")) == migrated
    assert ("trigger", "twin_audit_no_delete") in {r[:2] for r in migrated}  # v0010's own SQL


def test_an_existing_file_is_left_to_the_migrations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    existing = tmp_path / "kept.db"
    with sqlite3.connect(existing) as conn:
        conn.execute("CREATE TABLE mine (x INTEGER)")
    opened(existing)
    assert ("table", "mine") in {r[:2] for r in described(existing)}
    assert not list((tmp_path / "cache").glob("store-*"))  # nothing new: no template built


def test_a_cache_that_cannot_be_written_costs_the_copy_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(ENV_VAR, str(blocked / "cache"))
    assert ("revision", template_head()) in described(opened(tmp_path / "store.db"))


def template_head() -> str:
    from twinsched.store.migrate import file_head

    head = file_head()
    assert head is not None
    return head


def test_a_second_new_store_imports_no_alembic(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from twinsched.store.db import engine_for\n"
        "engine_for(sys.argv[1]).dispose()\n"
        "print('alembic' in sys.modules)"
    )
    env = {**os.environ, ENV_VAR: str(tmp_path / "cache")}
    runs = [
        subprocess.run([sys.executable, "-c", code, f"sqlite:///{tmp_path / name}"],
                       capture_output=True, text=True, env=env, timeout=120)
        for name in ("first.db", "second.db")
    ]  # fmt: skip
    assert [r.stdout.split() for r in runs] == [["True"], ["False"]], runs[-1].stderr[-2000:]
