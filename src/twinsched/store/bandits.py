"""Bandit posteriors kept across runs (table ``bandit_states``, revision 0011).

Keyed by the bandit's name, the scenario and the mode: a later run of the same bandit on the
same scenario and mode starts from what the earlier ones learned. What is written is checked
first (:func:`twinsched.model.bandit_posterior.checked`), and so is what is read back:
nothing out of range is stored or used.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from twinsched.model.bandit_posterior import Posterior, checked
from twinsched.model.names import check_safe_name
from twinsched.store.db import StoreError, engine_for
from twinsched.store.schema import BanditStateRow


def load_posterior(
    name: str, scenario: str, mode: str, db: str | Path | None = None
) -> Posterior | None:
    """The kept posterior of bandit ``name`` on ``scenario`` in ``mode``, or None."""
    data = _read(BanditStateRow.c.posterior, name, scenario, mode, db)
    return None if data is None else checked(data)


def kept_runs(name: str, scenario: str, mode: str, db: str | Path | None = None) -> int:
    """How many runs (or sessions) wrote the kept posterior of the key (0: none kept)."""
    runs = _read(BanditStateRow.c.runs, name, scenario, mode, db)
    return 0 if runs is None else int(runs)


def _read(column: Any, name: str, scenario: str, mode: str, db: str | Path | None) -> Any:
    """``column`` of the key's row, or None when nothing is kept for it."""
    with engine_for(db).connect() as conn:
        return conn.execute(
            select(column).where(
                BanditStateRow.c.name == name,
                BanditStateRow.c.scenario == scenario,
                BanditStateRow.c.mode == mode,
            )
        ).scalar_one_or_none()


def check_key(name: str, scenario: str, mode: str) -> None:
    """Refuse a key that :func:`save_posterior` could not keep (before any work is done)."""
    check_safe_name(mode, "mode")
    for text, what, most in ((name, "bandit name", 500), (scenario, "scenario", 255)):
        if not text or len(text) > most or not text.isprintable():
            raise StoreError(f"bad {what} {text[:80]!r}: 1-{most} printable characters")


def save_posterior(
    name: str, scenario: str, mode: str, posterior: Posterior, db: str | Path | None = None
) -> int:
    """Keep ``posterior`` (checked again) for the key; return how many runs added to it."""
    check_key(name, scenario, mode)
    data = checked(posterior.as_dict()).as_dict()
    now = datetime.now(UTC)
    with engine_for(db).begin() as conn:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        row = {"name": name, "scenario": scenario, "mode": mode, "posterior": data}
        upsert = dialect.insert(BanditStateRow).values(**row, runs=1, updated=now)
        runs = conn.execute(
            upsert.on_conflict_do_update(
                index_elements=["name", "scenario", "mode"],
                set_={"posterior": data, "updated": now, "runs": BanditStateRow.c.runs + 1},
            ).returning(BanditStateRow.c.runs)
        ).scalar_one()
    return int(runs)
