"""Fuzz the OpenAPI with schemathesis: no 5xx, every answer conforms to the schema.

Valid and invalid requests (positive and negative generation) for every operation, in
process over ASGI, with a fixed Hypothesis seed (derandomize) so a run is reproducible.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.twin.conftest import AUTH, TOKEN, make_client, tiny_document
from twinsched.store.db import dispose
from twinsched.twin.api.app import close_app, create_app
from twinsched.twin.core.settings import TwinSettings

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
REQUESTS = 520


def test_fuzz_the_openapi(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fuzz.db'}"
    config = TwinSettings(token=TOKEN, db=url, max_body_bytes=1 << 20)
    make_client(config).close()  # migrate before timing starts
    app = create_app(config)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    cases = st.one_of(
        schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE)
    )
    seen: Counter[str] = Counter()
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=REQUESTS,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: fail fast
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def run(case: schemathesis.Case[Any]) -> None:
        if seen.total() % 50 == 0:  # reload a real document now and then: more 200s
            app.state.service.replace(tiny_document())
        response = case.call(headers=AUTH)
        seen[f"{case.method} {case.path}"] += 1
        statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS)

    try:
        run()
    finally:
        close_app(app)
        dispose(url)
    assert seen.total() >= 500
    assert len(seen) >= 12, seen  # every operation was called
    assert not [s for s in statuses if s >= 500], statuses
    assert statuses[200] > 50 and statuses[422] > 50, statuses
