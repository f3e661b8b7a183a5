"""Fuzz the scheduler service's OpenAPI with schemathesis: no 5xx, answers match the schema.

Valid and invalid requests for every operation, in process over ASGI, with a fixed
Hypothesis seed so a run is reproducible; the node table is reset now and then so that
filter and prioritize also run against known nodes. Then again with the state read from a
real twin process, where ``POST /nodes`` answers 409.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.serve.fuzzing import twin_source
from tests.serve.test_protocol import AUTH, NODES, TOKEN
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, ObjectError, node_row
from twinsched.serve.kube import Node

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]  # fmt: skip
REQUESTS = 120  # bench/fuzz_serve.py runs more
TWIN_REQUESTS = 90  # (a twin round trip per filter call)


def test_fuzz_the_openapi() -> None:
    cluster = ServiceCluster("fgd", capacity=64)
    rows = [node_row(Node.model_validate(n), Names()) for n in NODES]

    def reset() -> None:
        with contextlib.suppress(ObjectError):  # (pods may select too many labels)
            cluster.set_nodes(rows)

    statuses = run_schemathesis(cluster, REQUESTS, reset)
    assert statuses[200] > REQUESTS // 5 and statuses[400] > REQUESTS // 10, statuses


def test_fuzz_the_openapi_with_a_twin(tmp_path: Path) -> None:
    """State from a real twin: ``POST /nodes`` answers the documented 409."""
    with twin_source(tmp_path) as source:
        cluster = ServiceCluster("fgd", capacity=64, source=source)
        statuses = run_schemathesis(cluster, TWIN_REQUESTS, lambda: None)
        # Which operations the fuzzer draws can vary with the machine's load (seen: no
        # POST /nodes in 150 cases under a full parallel suite), so the 409 is also asked
        # for directly, with a valid node list
        client = SyncASGI(create_app(cluster, Names(), TOKEN), owner=False)
        try:
            refused = client.post("/nodes", json={"items": NODES}, headers=AUTH)
        finally:
            client.close()
    assert refused.status_code == 409 and "twin" in refused.json()["detail"], refused.text
    assert statuses[200] > TWIN_REQUESTS // 9 and statuses[400] > TWIN_REQUESTS // 9, statuses


def run_schemathesis(
    cluster: ServiceCluster, requests: int, reset: Callable[[], object]
) -> Counter[int]:
    """Schemathesis' valid and invalid cases against the service; the status codes."""
    app = create_app(cluster, Names(), TOKEN)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    cases = st.one_of(
        schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE)
    )
    seen: Counter[str] = Counter()
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=requests,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def run(case: schemathesis.Case[Any]) -> None:
        if seen.total() % 40 == 0:
            reset()
        response = case.call(headers=AUTH)
        seen[f"{case.method} {case.path}"] += 1
        statuses[response.status_code] += 1
        case.validate_response(response, checks=CHECKS)

    run()
    assert seen.total() >= requests - 20
    assert len(seen) >= 8, seen  # every operation was called
    assert not [s for s in statuses if s >= 500], statuses
    return statuses
