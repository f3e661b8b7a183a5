"""Where the store lives and how to reach it: URL resolution, engines, migrations on first use.

The URL is the explicit ``db`` argument, else ``$TWINSCHED_DB``, else an SQLite file under the
user's data directory. A bare path is an SQLite file. Any ``postgresql+psycopg://`` URL works;
``?options=-csearch_path%3DNAME`` puts the store in its own schema.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

# SQLAlchemy is the ``store`` extra, guarded once in ``twinsched.store``'s own import.
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from twinsched.errors import TwinschedError
from twinsched.extras import data_home

ENV_VAR = "TWINSCHED_DB"


class StoreError(TwinschedError):
    """A store operation failed on purpose (unknown scenario, name taken, bad URL)."""


def default_path() -> Path:
    """The SQLite file used when neither ``db`` nor ``$TWINSCHED_DB`` is given."""
    return data_home() / "twinsched.db"


def resolve_url(db: str | Path | None = None) -> str:
    """The SQLAlchemy URL of the store: argument, ``$TWINSCHED_DB``, then the default file."""
    raw = str(db) if db else os.environ.get(ENV_VAR) or ""
    if not raw:
        return f"sqlite:///{default_path()}"
    if "://" in raw:
        if raw.startswith(("postgresql://", "postgres://")):
            raw = "postgresql+psycopg://" + raw.split("://", 1)[1]
        return raw
    return f"sqlite:///{Path(raw).expanduser()}"


_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def engine_for(db: str | Path | None = None) -> Engine:
    """One engine per URL, migrated to the latest revision the first time it is asked for.

    A database that cannot be reached (or created) raises :class:`StoreError` naming the URL
    (password hidden) and the driver's reason, not the driver's traceback.
    """
    url = resolve_url(db)
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            from twinsched.store.migrate import upgrade
            from twinsched.store.template import seed

            try:
                seed(url, _create_engine)  # a new SQLite file: a copy of an empty store
                upgrade(engine)
            except sa.exc.DBAPIError as exc:  # cannot connect or open: a message, no traceback
                engine.dispose()
                raise StoreError(
                    f"cannot open the store {safe_url(url)}: {_first_line(exc)}"
                ) from None
            _engines[url] = engine
    return engine


def safe_url(url: str) -> str:
    """``url`` with its password, if any, shown as ``***``."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url


def _first_line(exc: sa.exc.DBAPIError) -> str:
    lines = str(exc.orig).strip().splitlines() or [type(exc.orig).__name__]
    return lines[0].removeprefix("connection failed: ")


def _create_engine(url: str) -> Engine:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        try:
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot open the store {url}: {exc.strerror or exc}") from None
    try:
        engine = sa.create_engine(url)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as exc:
        raise StoreError(f"bad database URL {safe_url(url)!r}: {exc}") from exc
    if engine.dialect.name == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    elif engine.dialect.name != "postgresql":
        raise StoreError(f"unsupported database {engine.dialect.name!r}: use SQLite or PostgreSQL")
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def dispose_all() -> None:
    """Close every pooled connection (tests, and before dropping a schema)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def dispose(db: str | Path | None = None) -> None:
    """Close the pooled connections of one database and forget its engine."""
    url = resolve_url(db)
    with _lock:
        engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()
