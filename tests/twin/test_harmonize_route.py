"""POST /harmonize on a bare FastAPI app: every example answers, bad input is a named 422.

Requests go through ``httpx.ASGITransport`` (``SyncASGI``): Starlette's TestClient warns with
this httpx version and warnings are errors in the tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from tests.twin.conftest import SyncASGI
from twinsched.twin.api.problems import install
from twinsched.twin.api.routes.harmonize import EXAMPLES, router
from twinsched.twin.harmonize import HarmonizeResult


@pytest.fixture
def client() -> Iterator[SyncASGI]:
    """The router on a bare app with the service's JSON errors (no auth, limits or prefix)."""
    app = FastAPI()
    install(app)
    app.include_router(router)
    bare = SyncASGI(app)
    yield bare
    bare.close()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_openapi_example_converts(client: SyncASGI, name: str) -> None:
    answer = client.post("/harmonize", json=EXAMPLES[name]["value"])
    assert answer.status_code == 200, answer.text
    result = HarmonizeResult.model_validate(answer.json())
    assert result.source == name
    assert result.document.nodepools


def test_prometheus_example_is_aligned_on_the_step(client: SyncASGI) -> None:
    result = client.post("/harmonize", json=EXAMPLES["prometheus"]["value"]).json()
    assert result["samples"] == [
        {
            "node": "n1",
            "metric": "cpu_util",
            "times": [1700000010.0, 1700000040.0],
            "values": [0.4, 0.5],
        }
    ]
    assert result["dropped"] == [
        {
            "path": "samples.n1.cpu_util",
            "reason": "missing: no sample in the window of 15 s ending at t=1700000025",
        }
    ]


@pytest.mark.parametrize(
    ("body", "path", "words"),
    [
        ({"payload": {"hello": 1}}, "body.payload", "none of the accepted formats"),
        ({"payload": {"vertexpools": 3}}, "body.payload.vertexpools", "must be a list"),
        (
            {"payload": {"nodepools": [{"id": ""}]}},
            "body.payload.nodepools[0].id",
            "must not be empty",
        ),
        ({"payload": "a,b\n1,2"}, "body.payload", "none of the accepted formats"),
        ({"payload": "node,node_cores\nr1,4"}, None, None),
        ({"payload": {"nodepools": []}, "base": {"networks": 1}}, "body.base.networks", "array"),
        (
            {"payload": {"nodepools": []}, "step_s": 0},
            "body.step_s",
            "greater than or equal to 0.001",
        ),
        ({"payload": {"nodepools": []}, "source": "yaml"}, "body.source", "Input should be"),
        ({"payload": 3}, "body.payload", "must be an object, an array or text, not int"),
        ({"payload": None}, "body.payload", "not NoneType"),
        ({}, "body.payload", "Field required"),
        ({"payload": [], "extra": 1}, "body.extra", "Extra inputs"),
    ],
)
def test_bad_input_is_422_naming_the_field(
    client: SyncASGI, body: dict[str, Any], path: str | None, words: str | None
) -> None:
    answer = client.post("/harmonize", json=body)
    if path is None:
        assert answer.status_code == 200, answer.text
        return
    assert answer.status_code == 422, answer.text
    error = answer.json()
    assert error["detail"].startswith(f"{path}: "), error
    assert any(e["path"] == path and words in e["problem"] for e in error["errors"]), error


def test_tiny_step_over_a_long_span_is_422_on_step_s(client: SyncASGI) -> None:
    series = {"metric": {"node": "n1", "__name__": "m"}, "values": [[0, "1"], [1e9, "2"]]}
    payload = {"status": "success", "data": {"resultType": "matrix", "result": [series]}}
    answer = client.post("/harmonize", json={"payload": payload, "step_s": 0.001})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["path"] == "body.step_s"


def test_openapi_lists_the_examples_and_the_422(client: SyncASGI) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/harmonize"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    assert sorted(examples) == sorted(EXAMPLES)
    assert "422" in operation["responses"]
