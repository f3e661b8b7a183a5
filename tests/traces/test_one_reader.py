"""One format, one reader (style habit 19): the store's importers and the twin's harmoniser
call the same reader in ``twinsched.traces``, checked by a spy on that reader being hit by both.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.model.test_document import tiny
from twinsched.store.importers import get_importer
from twinsched.traces import twin_json
from twinsched.traces.supercloud import jobs as supercloud
from twinsched.twin.harmonize import harmonize

JOB_ROW = {
    "id_job": "7.0",
    "nodes_alloc": 1,
    "nodelist": "['r1']",
    "cpus_req": 4,
    "tres_req": "1=4,2=1000",
    "time_submit": 100,
    "time_start": 110,
    "time_end": 200,
}


def spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Wrap ``module.name`` so that every call is recorded; the calls' first arguments."""
    calls: list[Any] = []
    real: Callable[..., Any] = getattr(module, name)

    def recorded(value: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(value)
        return real(value, *args, **kwargs)

    monkeypatch.setattr(module, name, recorded)
    return calls


def test_supercloud_jobs_have_one_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = spy(monkeypatch, supercloud, "whole_job_id")
    file = tmp_path / "slurm-log.csv"
    with file.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(JOB_ROW))
        writer.writeheader()
        writer.writerow(JOB_ROW)
    [scenario] = get_importer("supercloud").function(file, "sc", {})
    assert calls == ["7.0"] and scenario.pods.job_names == ("7",)
    result = harmonize({"jobs": [JOB_ROW]}, source="tables")
    assert calls == ["7.0", "7.0"] and result.document.jobs[0].id == "7"


def test_twin_json_has_one_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = spy(monkeypatch, twin_json, "parse")
    file = tmp_path / "tiny.json"
    file.write_text(json.dumps(tiny()), encoding="utf-8")
    [scenario] = get_importer("twin-json").function(file, "tiny", {})
    assert len(calls) == 1 and scenario.meta["source"] == "twin-json"
    result = harmonize(tiny(), source="twin")
    assert len(calls) == 2 and result.source == "twin"


def test_store_importers_and_harmonize_name_the_same_readers() -> None:
    from twinsched.store.importers import supercloud as sc_importer
    from twinsched.store.importers import twin_json as json_importer
    from twinsched.twin.harmonize.core import CONVERTERS

    assert sc_importer.supercloud is supercloud and json_importer.twin_json is twin_json
    assert CONVERTERS["twin"] is twin_json.from_twin
    assert CONVERTERS["tables"].__module__ == "twinsched.traces.supercloud.tables"
