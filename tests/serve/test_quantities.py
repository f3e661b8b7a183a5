"""Kubernetes quantities are read with bounds before any arithmetic (issue 31, class 2).

``nvidia.com/gpu: "1e999999"`` used to keep the service's event loop busy for 88 s (then a
500) and ``"1e1000000"`` raised ``decimal.Overflow`` (a 500 on every verb, a traceback from
``--nodes FILE``). A real service process is sent hostile quantities on every route that
reads them while ``/healthz`` is polled beside them: each answer within 1 s, a 400 naming
the field, and ``/healthz`` never held up.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve.process import refused_start, running_service
from tests.serve.test_protocol import NODES, node, pod
from twinsched.serve.convert import ObjectError
from twinsched.serve.quantity import quantity

TOKEN = "quantity-test-token-0123456789abcdef0123"
AUTH = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
LIMIT_S = 1.0


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [("500m", "millis", 500), ("16Gi", "MiB", 16384), ("1e3", "", 1000), ("1E3", "", 1000),
     ("+2", "", 2), (".5", "millis", 500), ("1.", "", 1), ("-0", "", 0), ("1E", "MiB",
     Decimal(10**18) / 2**20), ("2Ki", "", 2048), ("1e-99", "", Decimal("1e-99")),
     ("9007199254740992", "", 2**53), (7, "", 7), (2.5, "millis", 2500)],
)  # fmt: skip
def test_the_kubernetes_grammar_is_read(text: object, unit: str, value: Decimal) -> None:
    assert quantity(text, "f", unit) == value


@pytest.mark.timing
@pytest.mark.parametrize(
    ("text", "says"),
    [("1e999999", "exponent out of range [-99, 99]"), ("1e1000000", "exponent out of range"),
     ("-1e999999", "exponent out of range"), ("1e-100", "exponent out of range"),
     ("1e99", "outside the accepted range [0, 2^53]"), ("9007199254740993", "[0, 2^53]"),
     ("-1", "outside the accepted range"), ("9" * 100_000, "100000 characters (at most 64)"),
     ("1e3Mi", "not a Kubernetes quantity"), ("0x10", "not a Kubernetes quantity"),
     ("\u0661", "not a Kubernetes quantity"), (" 1", "not a Kubernetes quantity"),
     ("1.5.3", "not a Kubernetes quantity"), ("nan", "not a Kubernetes quantity"),
     ("1ki", "not a Kubernetes"), ("1GiB", "not a Kubernetes"), (float("inf"), "finite"),
     (10**4000, "out of range"), (1e300, "exponent out of range"), (True, "a bool"),
     ("16Ei", "[0, 2^53]")],
)  # fmt: skip
def test_bad_quantities_are_refused_naming_the_field(text: object, says: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ObjectError, match=r"^the\.field: ") as caught:
        quantity(text, "the.field")
    assert says in caught.value.problem
    assert len(caught.value.problem) < 200  # a long value is quoted as an excerpt
    assert time.perf_counter() - started < 0.01


HOSTILE: list[Any] = [
    "1e999999", "1e1000000", "-1e999999", "1e-999999", "1e+0000000099999", "9" * 100_000,
    "1" * 64, "0." + "0" * 61 + "1e99", "9999Ei", "1e3Mi", "\u0661\u0662", 1e308, 10**1000,
]  # fmt: skip
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "twinsched.io/gpu-milli")


def bodies() -> Iterator[tuple[str, str, bytes, bool]]:
    """(route, what, body, hostile) for every hostile quantity on every route reading one,
    and bodies with many fields (thousands of containers or resources)."""
    for value in HOSTILE:
        for resource in RESOURCES:
            what = f"{resource}={str(value)[:20]}"
            p = pod("h", **{resource: value})
            n = node("h", 2)
            n["status"]["allocatable"][resource] = value
            names = [x["metadata"]["name"] for x in NODES]
            for verb in ("filter", "prioritize"):
                yield verb, what, _dumps({"Pod": p, "NodeNames": names}), True
                nodes = {"Pod": pod("n", cpu="1"), "Nodes": {"items": [n]}}
                yield verb, what, _dumps(nodes), resource != "twinsched.io/gpu-milli"
            read = resource != "twinsched.io/gpu-milli"  # (a pod's resource, not a node's)
            yield "nodes", what, _dumps({"items": [*NODES, n]}), read
            yield "pods", what, _dumps(p), True
    many = pod("many")
    many["spec"]["containers"] *= 5000
    yield "filter", "5000 containers", _dumps({"Pod": many, "NodeNames": ["gpu-1"]}), False
    many["spec"]["containers"][-1]["resources"]["requests"] = {"cpu": "1e999999"}
    yield "prioritize", "5000 containers, the last hostile", _dumps({"Pod": many}), True
    wide = node("wide", 2)
    wide["status"]["allocatable"] |= {f"example.com/r{k}": "1e999999" for k in range(20_000)}
    yield "nodes", "20000 resources", _dumps({"items": [*NODES, wide]}), False


def _dumps(body: object) -> bytes:
    return json.dumps(body).encode()


class Prober(threading.Thread):
    """Polls ``/healthz`` until stopped; keeps the slowest answer and any failure."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.slowest, self.failures, self.answers = url, 0.0, [], 0
        self.done = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.done.is_set():
                started = time.perf_counter()
                try:
                    ok = client.get(f"{self.url}/healthz").status_code == 200
                except httpx.HTTPError as exc:
                    ok = False
                    self.failures.append(repr(exc))
                self.slowest = max(self.slowest, time.perf_counter() - started)
                self.answers += ok
                time.sleep(0.02)


@pytest.mark.timing  # the probe's 1 s budget is wall time: run alone
def test_no_request_holds_the_event_loop_whatever_its_quantities(tmp_path: Path) -> None:
    with running_service(tmp_path, TOKEN, NODES) as url, httpx.Client(timeout=10) as client:
        prober = Prober(url)
        prober.start()
        slow: list[str] = []
        try:
            for route, what, body, hostile in bodies():
                started = time.perf_counter()
                answer = client.post(f"{url}/{route}", content=body, headers=AUTH)
                took = time.perf_counter() - started
                if took > LIMIT_S:
                    slow.append(f"{route} {what}: {took:.1f} s")
                assert answer.status_code < 500, (route, what, answer.text[:300])
                if hostile:
                    assert answer.status_code == 400, (route, what, answer.text[:300])
                    named = "resources" in answer.text or "allocatable" in answer.text
                    assert named or "=1e+308" in what or "=1000000" in what, answer.text[:300]
        finally:
            prober.done.set()
            prober.join()
        assert client.get(f"{url}/readyz").status_code == 200  # the nodes are still there
    assert not slow, slow
    # the probe kept being answered (how often depends on the machine's load: 19 to 60 seen)
    assert not prober.failures and prober.answers >= 5, prober.failures
    assert prober.slowest < LIMIT_S, prober.slowest


@pytest.mark.parametrize(
    ("value", "says"),
    [('"1e1000000"', "exponent out of range"), ("1e999", "must be a finite quantity")],
)  # fmt: skip
def test_serve_nodes_file_with_a_bad_quantity_is_a_clear_error(
    value: str, says: str, tmp_path: Path
) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(
        '{"items": [{"metadata": {"name": "n"}, "status": {"allocatable": '
        f'{{"cpu": "8", "nvidia.com/gpu": {value}}}}}}}]}}'
    )
    said = refused_start("--nodes", str(nodes))
    assert f"error: --nodes {nodes}: items[0].status.allocatable[nvidia.com/gpu]" in said, said
    assert says in said, said
