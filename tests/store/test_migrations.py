from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from twinsched.store import db as store_db
from twinsched.store import list_scenarios, migrate
from twinsched.store.migrate import current_revision, downgrade, head_revision, upgrade
from twinsched.store.schema import metadata as store_metadata

TABLES = {"scenarios", "nodepools", "nodes", "links", "jobs", "pods", "runs", "run_results"}
# Tables other modules migrate in the same database (e.g. the twin's history) are not ours.
STORE_TABLES = set(store_metadata.tables)


def _ours(name: str | None, type_: str, _parents: object) -> bool:
    return type_ != "table" or name in STORE_TABLES


def _tables(engine: sa.Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}


def test_first_use_migrates_to_head(empty_db: str) -> None:
    assert list_scenarios(empty_db) == []
    engine = store_db.engine_for(empty_db)
    assert current_revision(engine) == head_revision()
    assert _tables(engine) >= TABLES


def test_a_postgresql_store_starts_at_the_head_with_no_rows(pg_url: str) -> None:
    """``pg_url`` is a copy of a database migrated once per test process: at the head, and
    empty whatever the tests before it wrote (they wrote to copies of their own)."""
    engine = sa.create_engine(pg_url)
    try:
        assert migrate.stored_revision(engine) == head_revision()
        with engine.connect() as conn:
            count = lambda t: conn.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar()  # noqa: E731
            counts = {table: count(table) for table in TABLES}
        assert set(counts.values()) == {0}, counts
    finally:
        engine.dispose()


def test_downgrade_to_base_and_upgrade_again(db: str) -> None:
    engine = store_db.engine_for(db)
    downgrade(engine, "base")
    assert _tables(engine) == set()
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    everything = TABLES | {"run_decisions", "scenario_columns", "sweeps", "sweep_runs",
                           "run_listing", "bandit_states"}  # fmt: skip
    assert _tables(engine) >= everything == STORE_TABLES


def test_the_head_read_from_the_revision_files_is_alembics() -> None:
    assert migrate.file_head() == head_revision()


def test_a_store_behind_the_head_is_upgraded_and_one_at_it_is_left(db: str) -> None:
    """The check without Alembic reads the stored revision; only the head passes it."""
    engine = store_db.engine_for(db)
    downgrade(engine, "0007")
    assert migrate.stored_revision(engine) == "0007" != migrate.file_head()
    upgrade(engine)
    assert migrate.stored_revision(engine) == current_revision(engine) == head_revision()
    with engine.begin() as conn:  # two rows: not a state the check trusts
        conn.execute(sa.text("INSERT INTO alembic_version VALUES ('0007')"))
    assert migrate.stored_revision(engine) is None


@pytest.mark.parametrize(
    ("files", "head"),
    [
        (
            {
                "a.py": 'revision = "1"\ndown_revision = None\n',
                "b.py": 'revision = "2"\ndown_revision: str | None = "1"\n',
            },
            "2",
        ),
        (
            {
                "a.py": 'revision = "1"\ndown_revision = None\n',
                "b.py": 'revision = "2"\ndown_revision = "1"\n',
                "c.py": 'revision = "3"\ndown_revision = "1"\n',
            },
            None,
        ),  # a branch: two heads
        (
            {
                "a.py": 'revision = "1"\ndown_revision = None\n',
                "b.py": 'revision = "2"\ndown_revision = "1"\ndepends_on = "x"\n',
            },
            None,
        ),
        ({"a.py": 'revision = "1"\ndown_revision = ("0", "x")\n'}, None),  # a merge
        ({"a.py": 'revision = "2"\ndown_revision = "1"\n'}, None),  # "1" is missing
    ],
)
def test_a_head_is_read_from_the_files_only_when_they_form_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], head: str | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(migrate, "VERSIONS", tmp_path)
    migrate.file_head.cache_clear()
    try:
        assert migrate.file_head() == head
    finally:
        migrate.file_head.cache_clear()


def test_models_match_the_migrations(db: str) -> None:
    engine = store_db.engine_for(db)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": _ours})
        diff = compare_metadata(context, store_metadata)
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
