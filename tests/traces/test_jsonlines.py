from __future__ import annotations

import json

from twinsched.traces.jsonlines import line_of, parse_path

DOC = {
    "nodepools": [{"id": "a", "nodes": [{"id": "n1", "hardware": {"cpu_milli": 1}}]}],
    "jobs": [{"id": "j", "pods": [{"id": "p0"}, {"id": "p1", "requests": {"cpu_milli": -1}}]}],
    "x y": {"k": [1, 2, {"deep": True}]},
}
TEXT = json.dumps(DOC, indent=2)
LINES = TEXT.split("\n")


def _line_with(fragment: str, after: int = 0) -> int:
    return next(i for i, t in enumerate(LINES) if i >= after and fragment in t) + 1


def test_parse_path() -> None:
    assert parse_path("jobs[0].pods[1].requests.cpu_milli") == [
        "jobs", 0, "pods", 1, "requests", "cpu_milli"
    ]  # fmt: skip
    assert parse_path('["x y"].k[2]') == ["x y", "k", 2]
    assert parse_path("document") == []


def test_line_of_values_and_missing_fields() -> None:
    assert line_of(TEXT, "jobs[0].pods[1].requests.cpu_milli") == _line_with("-1")
    assert line_of(TEXT, "nodepools[0].nodes[0].hardware.cpu_milli") == _line_with('"cpu_milli": 1')
    assert line_of(TEXT, '["x y"].k[2].deep') == _line_with('"deep"')
    # a missing field: the line of the object that lacks it
    assert line_of(TEXT, "jobs[0].pods[0].requests") == _line_with('"id": "p0"') - 1
    assert line_of(TEXT, "document") == 1
    assert line_of(json.dumps(DOC), "jobs[0].pods[1].id") == 1
