from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from twinsched.store import db as store_db
from twinsched.store import list_scenarios
from twinsched.store.migrate import current_revision, downgrade, head_revision, upgrade
from twinsched.store.schema import Base

TABLES = {"scenarios", "nodepools", "nodes", "links", "jobs", "pods", "runs", "run_results"}
# Tables other modules migrate in the same database (e.g. the twin's history) are not ours.
STORE_TABLES = set(Base.metadata.tables)


def _ours(name: str | None, type_: str, _parents: object) -> bool:
    return type_ != "table" or name in STORE_TABLES


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def test_first_use_migrates_to_head(db: str) -> None:
    assert list_scenarios(db) == []
    engine = store_db.engine_for(db)
    assert current_revision(engine) == head_revision()
    assert _tables(engine) >= TABLES


def test_downgrade_to_base_and_upgrade_again(db: str) -> None:
    engine = store_db.engine_for(db)
    downgrade(engine, "base")
    assert _tables(engine) == set()
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    everything = TABLES | {"run_decisions", "scenario_columns", "sweeps", "sweep_runs",
                           "run_listing"}  # fmt: skip
    assert _tables(engine) >= everything == STORE_TABLES


def test_models_match_the_migrations(db: str) -> None:
    engine = store_db.engine_for(db)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": _ours})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_default_location_and_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(store_db.ENV_VAR, f"{tmp_path}/x/y.db")
    assert store_db.resolve_url() == f"sqlite:///{tmp_path}/x/y.db"
    monkeypatch.delenv(store_db.ENV_VAR)
    assert store_db.resolve_url().endswith("/twinsched/twinsched.db")
    assert store_db.resolve_url("postgresql://u@h/d") == "postgresql+psycopg://u@h/d"


def test_twin_history_tables_match_the_migrations(db: str) -> None:
    from twinsched.store.history.tables import metadata

    twin = set(metadata.tables)

    def _twin(name: str | None, type_: str, _parents: object) -> bool:
        return type_ != "table" or name in twin

    engine = store_db.engine_for(db)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": _twin})
        diff = compare_metadata(context, metadata)
    assert diff == []
