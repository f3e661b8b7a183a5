"""A new SQLite store starts as a copy of an empty store at the head revision.

Migrating a new database imports Alembic and runs every revision: about 0.6 s of CPU, most
of what a short command or a starting twin spends on its store. The first new SQLite store
of a cache folder (``traces/cachedir.py``) is migrated as before, into a template named by
the digest of the migration files and SQLAlchemy's version; each later one is a byte copy of
that template (same tables, indexes, triggers and ``alembic_version``, no rows), which
:func:`~twinsched.store.migrate.upgrade` then finds at the head. Anything unusual (no cache,
a folder that cannot be written, a template still in WAL, the store created meanwhile)
leaves the new store to the migrations.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from twinsched.store.migrate import VERSIONS, upgrade
from twinsched.traces.cachedir import cache_dir

PREFIX = "sqlite:///"


def seed(url: str, engine_of: Callable[[str], sa.Engine]) -> None:
    """Copy the template to ``url``'s file when that file does not exist yet (``engine_of``
    opens a URL as the store does)."""
    path = _new_file(url)
    folder = cache_dir()
    if path is None or folder is None:
        return
    try:
        template = folder / f"store-{_digest()}.sqlite"
        if not template.exists() and not _build(template, engine_of):
            return
        _copy(template, path)
    except (OSError, sa.exc.SQLAlchemyError):
        return  # a read-only or full cache: migrate as before


def _new_file(url: str) -> Path | None:
    if not url.startswith(PREFIX) or "?" in url or url == f"{PREFIX}:memory:":
        return None
    path = Path(url.removeprefix(PREFIX))
    return None if path.exists() else path


def _digest() -> str:
    """Over SQLAlchemy's version and the name and contents of every migration file."""
    digest = hashlib.sha256(f"twinsched-store-template 1\x00{sa.__version__}\x00".encode())
    for path in sorted([*VERSIONS.parent.glob("*.py"), *VERSIONS.glob("*.py")]):
        digest.update(path.name.encode() + b"\x00" + path.read_bytes() + b"\x00")
    return digest.hexdigest()[:32]


def _build(template: Path, engine_of: Callable[[str], sa.Engine]) -> bool:
    """Migrate a new file to the head and rename it to ``template`` (atomic); False when it
    did not end as one closed file."""
    template.parent.mkdir(parents=True, exist_ok=True)
    temp = template.with_name(f"{template.name}.{os.getpid()}.tmp")
    try:
        engine = engine_of(f"{PREFIX}{temp}")
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        if any(Path(f"{temp}{tail}").exists() for tail in ("-wal", "-journal")):
            return False
        os.replace(temp, template)
        return True
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            leftover.unlink(missing_ok=True)


def _copy(template: Path, path: Path) -> None:
    """Copy under a temporary name, then link it in place: a store another process created
    meanwhile is left as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.seed")
    try:
        shutil.copyfile(template, temp)
        with contextlib.suppress(FileExistsError):  # created meanwhile: left as it is
            os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)
