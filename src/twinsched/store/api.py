"""Import by importer name, and export to files (twin JSON, or one CSV per table)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from twinsched.errors import UnknownNameError
from twinsched.store.importers import get_importer
from twinsched.store.scenarios import ScenarioInfo, load_scenario, save_scenarios

ExportFormat = Literal["twin-json", "csv"]
FORMATS = ("twin-json", "csv")


def import_scenario(
    kind: str,
    path: str | Path,
    name: str,
    *,
    db: str | Path | None = None,
    replace: bool = False,
    options: Mapping[str, str] | None = None,
) -> list[ScenarioInfo]:
    """Read ``path`` with the importer ``kind`` and store the result in one transaction."""
    importer = get_importer(kind)
    scenarios = importer.function(Path(path), name, dict(options or {}))
    return save_scenarios(scenarios, source=kind, source_path=str(path), db=db, replace=replace)


def export_scenario(
    name: str, path: str | Path, fmt: str = "twin-json", *, db: str | Path | None = None
) -> Path:
    """Write a stored scenario: ``twin-json`` to a file, ``csv`` to a folder (``twin-csv``)."""
    if fmt not in FORMATS:
        raise UnknownNameError("export format", fmt, list(FORMATS))
    scenario = load_scenario(name, db)
    target = Path(path)
    if fmt == "twin-json":
        from twinsched.model.convert import scenario_to_document  # pydantic: only to export

        doc = scenario_to_document(scenario)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(doc.model_dump_json(indent=1) + "\n", encoding="utf-8")
        return target
    from twinsched.traces.twin_csv import write_tables

    write_tables(scenario, target)
    return target


__all__ = ["FORMATS", "ExportFormat", "export_scenario", "import_scenario"]
