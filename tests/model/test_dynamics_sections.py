"""A scenario's ``faults`` and ``energy`` sections in the twin format (issue 20): validated
against the schema and the models, errors naming the field, carried through ``meta``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from twinsched.model.convert import document_to_scenario, scenario_to_document
from twinsched.model.document import DocumentError
from twinsched.model.schema import validate_document
from twinsched.traces.synthetic import continuum

FAULTS = {
    "rate_per_day": 1.5,
    "outages": [{"pool": "edge", "down_s": 600, "for_s": 1200}],
    "links": [{"pools": ["edge", "cloud"], "down_s": 60, "for_s": 300}],
}
ENERGY = {"power_off_after_s": 900, "cpu_curve": [[0, 0], [0.5, 0.7], [1, 1]]}


def _document(**sections: Any) -> dict[str, Any]:
    doc = scenario_to_document(continuum(0, pods=40, hours=1)).model_dump(mode="json")
    return json.loads(json.dumps(doc | sections))  # as read from a file: lists, not tuples


def test_sections_pass_the_schema_and_reach_the_scenario_meta() -> None:
    doc = validate_document(_document(faults=FAULTS, energy=ENERGY))
    scenario = document_to_scenario(doc, "x")
    assert scenario.meta["faults"]["outages"] == FAULTS["outages"]
    assert scenario.meta["faults"]["links"][0]["pools"] == ["edge", "cloud"]
    assert scenario.meta["energy"]["power_off_after_s"] == 900
    again = scenario_to_document(scenario)  # and back into a document
    assert again.faults == doc.faults and again.energy == doc.energy


def test_a_document_without_sections_keeps_its_meta() -> None:
    scenario = document_to_scenario(validate_document(_document()), "x")
    assert "faults" not in scenario.meta and "energy" not in scenario.meta
    assert "faults" not in scenario_to_document(scenario).model_dump(exclude_none=True)


@pytest.mark.parametrize(
    ("faults", "path", "words"),
    [
        ({"rate_per_day": 101}, "faults.rate_per_day", "100"),
        ({"mtbf_s": 5}, "faults.mtbf_s", "unknown field"),
        ({"outages": [{"pool": "moon", "down_s": 0, "for_s": 1}]}, "faults.outages[0].pool",
         "unknown nodepool 'moon'"),
        ({"faults": [{"node": "edge-999", "down_s": 0, "for_s": 1}]}, "faults.faults[0].node",
         "unknown node 'edge-999'"),
        ({"faults": [{"node": "edge-000", "down_s": 0, "for_s": 0}]}, "faults.faults[0].for_s",
         "> 0"),
        ({"links": [{"pools": ["edge", "mars"], "down_s": 0, "for_s": 1}]},
         "faults.links[0].pools[1]", "unknown nodepool 'mars'"),
        ({"pools": {"fog": {"rate_per_day": 1}}}, "faults.pools.fog", "unknown nodepool"),
    ],
)  # fmt: skip
def test_a_bad_faults_section_names_the_field(faults: Any, path: str, words: str) -> None:
    with pytest.raises(DocumentError) as caught:
        validate_document(_document(faults=faults))
    message = str(caught.value)
    assert message.startswith(f"{path}:") and words in message, message


def test_a_bad_energy_section_names_the_field() -> None:
    with pytest.raises(DocumentError, match=r"^energy\.wake_s: "):
        validate_document(_document(energy={"wake_s": -1}))
