"""Scenario store and run results: SQLAlchemy 2, SQLite by default, PostgreSQL by URL.

The database is ``db`` (a URL or an SQLite path), else ``$TWINSCHED_DB``, else
``twinsched.db`` under the user's data directory; Alembic migrations run on first use.
Needs the ``store`` extra: ``pip install 'twinsched[store]'``.
"""

from __future__ import annotations

import importlib.util
import typing

from twinsched import extras, lazy

# The one guard of the store: every module below runs this package's import first. Alembic
# is only looked for here: it is imported when a database needs migrating (store/migrate.py).
with extras.needs("store", "the scenario store needs SQLAlchemy, Alembic and psycopg"):
    import sqlalchemy  # noqa: F401

    if importlib.util.find_spec("alembic") is None:
        raise ImportError("No module named 'alembic'", name="alembic")

# The names below are imported on first use (``__getattr__``): recording a run reads
# ``runs.py`` and the tables, not the scenario codecs, importers and COPY paths.
_LAZY = {
    "export_scenario": "api", "import_scenario": "api",
    "StoreError": "db", "resolve_url": "db",
    "Decision": "runs", "RunInfo": "runs", "get_run": "runs", "list_runs": "runs",
    "record_run": "runs", "recorded_keys": "runs",
    "ScenarioExistsError": "scenarios", "ScenarioInfo": "scenarios",
    "ScenarioNotFoundError": "scenarios", "delete_scenario": "scenarios",
    "list_scenarios": "scenarios", "load_scenario": "scenarios", "save_scenarios": "scenarios",
    "scenario_info": "scenarios",
    "SweepInfo": "sweeps", "SweepNotFoundError": "sweeps", "list_sweeps": "sweeps",
    "register_sweep": "sweeps", "sweep_info": "sweeps", "sweep_run_ids": "sweeps",
}  # fmt: skip

if typing.TYPE_CHECKING:
    from twinsched.store.api import export_scenario, import_scenario
    from twinsched.store.db import StoreError, resolve_url
    from twinsched.store.runs import (
        Decision,
        RunInfo,
        get_run,
        list_runs,
        record_run,
        recorded_keys,
    )
    from twinsched.store.scenarios import (
        ScenarioExistsError,
        ScenarioInfo,
        ScenarioNotFoundError,
        delete_scenario,
        list_scenarios,
        load_scenario,
        save_scenarios,
        scenario_info,
    )
    from twinsched.store.sweeps import (
        SweepInfo,
        SweepNotFoundError,
        list_sweeps,
        register_sweep,
        sweep_info,
        sweep_run_ids,
    )


__all__ = [
    "Decision",
    "RunInfo",
    "ScenarioExistsError",
    "ScenarioInfo",
    "ScenarioNotFoundError",
    "StoreError",
    "SweepInfo",
    "SweepNotFoundError",
    "delete_scenario",
    "export_scenario",
    "get_run",
    "import_scenario",
    "list_runs",
    "list_scenarios",
    "list_sweeps",
    "load_scenario",
    "record_run",
    "recorded_keys",
    "register_sweep",
    "resolve_url",
    "save_scenarios",
    "scenario_info",
    "sweep_info",
    "sweep_run_ids",
]

__getattr__ = lazy.lazy_names(__name__, _LAZY)
