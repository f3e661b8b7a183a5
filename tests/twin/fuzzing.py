"""Fuzz the twin's HTTP API and count what happened, per endpoint (the issue-16 table).

Requests come from schemathesis (valid and invalid cases from the OpenAPI) and from hostile
strategies written here for the failure classes the schema cannot express: deep nesting,
ids with NUL, control, bidi, zero-width or separator characters or over the length limit,
numbers given as ``true`` or ``"100"``, batches going back in time or far into the future,
CSV with bare carriage returns, absurd steps, ``/harmonize`` bodies over its limit. Each
answer is counted once:

- ``accepted``: 2xx/3xx; ``clear error``: a 4xx whose body is the service's JSON problem;
- ``5xx``: any 5xx; ``tracebacks``: an exception out of the app, or an error answer that is
  not a JSON problem (a plain-text 500);
- ``stored wrongly``: a refused write that still changed the state, or an accepted batch
  older than the state (time going backwards) or more than a day ahead; at the end, a
  history that does not replay to the served state counts once more;
- ``schema violations``: answers that break the OpenAPI (status, content type, body).

``tests/twin/test_fuzz.py`` runs it with a small budget; ``bench/fuzz_twin.py`` with a large one.
"""

from __future__ import annotations

import json
import traceback
from collections import Counter
from dataclasses import dataclass, field
from time import time as now
from typing import Any

import hypothesis.strategies as st
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests import fuzz_table
from tests.twin.conftest import AUTH, SyncASGI, tiny_document
from twinsched.twin.core.deltas import MAX_AHEAD_S
from twinsched.twin.core.service import TwinService, rebuild

CHECKS = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
WRITES = {"PUT", "PATCH", "POST"}


@dataclass
class Tally(fuzz_table.Tally):
    """The counts of one endpoint, and its answers that break the OpenAPI."""

    violations: int = 0


@dataclass
class Report:
    """Tallies by endpoint (``METHOD /path``) and the answers' status codes."""

    tallies: dict[str, Tally] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # the first few 5xx and tracebacks

    def failed(self, what: str) -> None:
        """Keep what a failing answer was, so that a rare failure can be diagnosed."""
        if len(self.failures) < 5:
            self.failures.append(what[:800])

    def tally(self, target: str) -> Tally:
        return self.tallies.setdefault(target, Tally())

    def total(self) -> Tally:
        out = Tally()
        for tally in self.tallies.values():
            for name, value in vars(tally).items():
                setattr(out, name, getattr(out, name) + value)
        return out

    def table(self, suffix: str = "") -> list[str]:
        """The table's rows (header first), one per endpoint."""
        lines = list(fuzz_table.HEADER)
        for target in sorted(self.tallies):
            lines.append(self.tallies[target].row(f"twin `{target}`{suffix}"))
        return lines + [f"failure: {what}" for what in self.failures]


# -- hostile requests -------------------------------------------------------------------------
@dataclass(frozen=True)
class Hostile:
    """One raw request: method, path under /api/v1, query and a raw body."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    body: bytes | None = None


BAD_IDS = st.sampled_from(
    ["\x00", "n\x00", "a\tb", "\x7f", "x" * 254, "é" * 3000, "", "\n", "n\x85", "n\u202e1",
     "n\u200b", "\ufeffn1", "n\u2028", "n\U000e0041"]
)  # fmt: skip
BAD_NUMBERS = st.sampled_from([True, False, "100", "1e3", None, [], {}, "nan"])
BAD_STEPS = st.sampled_from([5e-324, 1e-300, 1e-9, 0.0, -1.0, 1e300, 1e13, "1", True])


def _nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def _put_bad_id(draw: st.DrawFn) -> Hostile:
    doc = json.loads(tiny_document().model_dump_json())
    where = draw(st.sampled_from(["pool", "node", "job", "pod"]))
    bad = draw(BAD_IDS)
    target = {
        "pool": doc["nodepools"][0],
        "node": doc["nodepools"][0]["nodes"][0],
        "job": doc["jobs"][0],
        "pod": doc["jobs"][0]["pods"][0],
    }[where]
    target["id"] = bad
    return Hostile("PUT", "/state", body=_dump(doc))


@st.composite
def _patch(draw: st.DrawFn) -> Hostile:
    time = draw(st.floats(0, 50) | st.sampled_from(["5", True, None, 1e12, 9.9e11]))
    kind = draw(st.sampled_from(["number", "metric", "node", "start", "valid"]))
    delta: dict[str, Any] = {"op": "metrics", "node": "n1", "values": {"u": 1.0}}
    if kind == "number":
        delta["values"] = {"u": draw(BAD_NUMBERS)}
    elif kind == "metric":
        delta["values"] = {draw(BAD_IDS): 1.0}
    elif kind == "node":
        delta["node"] = draw(BAD_IDS)
    elif kind == "start":
        delta = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}
        delta["start_s"] = draw(BAD_NUMBERS)
    return Hostile("PATCH", "/state", body=_dump({"time": time, "deltas": [delta]}))


@st.composite
def _timeline(draw: st.DrawFn) -> Hostile:
    """A valid batch at a random time: some go back in time (409), the others apply."""
    node = draw(st.sampled_from(["n1", "n2", "g1"]))
    delta = {"op": "metrics", "node": node, "values": {"u": draw(st.floats(-1e3, 1e3))}}
    return Hostile(
        "PATCH", "/state", body=_dump({"time": draw(st.floats(0, 100)), "deltas": [delta]})
    )


@st.composite
def _nesting(draw: st.DrawFn) -> Hostile:
    depth = draw(st.integers(500, 6000))
    method, path, wrap = draw(
        st.sampled_from(
            [
                ("PUT", "/state", "{}"),
                ("PATCH", "/state", '{"time":1,"deltas":[{"op":"metrics","values":{}}]}'),
                ("POST", "/harmonize", '{"payload":{}}'),
                ("POST", "/harmonize", '{"payload":"{}"}'),
            ]
        )
    )  # fmt: skip
    inner = _nested(depth)
    if wrap.endswith('"{}"}'):
        inner = inner.replace('"', '\\"')
    body = inner if wrap == "{}" else wrap.replace("{}", inner, 1)
    return Hostile(method, path, body=body.encode())


@st.composite
def _harmonize(draw: st.DrawFn) -> Hostile:
    rows = ["id_job,time_submit", "1,5", "2,6", "node,node_cores", "n1,4"]
    text = "\n".join(rows[: draw(st.integers(1, len(rows)))])
    cut = draw(st.integers(0, len(text)))
    text = text[:cut] + draw(st.sampled_from(["\r", "\r\r", "\x00", '"', "\r\n"])) + text[cut:]
    body: dict[str, Any] = {"source": draw(st.sampled_from(["auto", "tables"])), "payload": text}
    if draw(st.booleans()):
        body["step_s"] = draw(BAD_STEPS)
    return Hostile("POST", "/harmonize", body=_dump(body))


@st.composite
def _history(draw: st.DrawFn) -> Hostile:
    params = {"metric": draw(BAD_IDS | st.just("u")), "node": draw(BAD_IDS | st.just("n1"))}
    return Hostile("GET", "/history", params=params)


@st.composite
def _harmonize_large(draw: st.DrawFn) -> Hostile:
    """A body over the route's own limit (the fuzzed app's: 1 MiB), in one of a few shapes."""
    size = draw(st.integers(1 << 20, 3 << 20))
    kind = draw(st.sampled_from(["text", "rows"]))
    payload: Any = "n" * size if kind == "text" else [{"node": "n1"}] * (size // 14)
    return Hostile("POST", "/harmonize", body=_dump({"payload": payload}))


HOSTILE = st.one_of(
    _put_bad_id(), _patch(), _timeline(), _nesting(), _harmonize(), _history(), _harmonize_large()
)


# -- the driver ---------------------------------------------------------------------------------
def openapi_cases(app: FastAPI, tag: str | None = None) -> st.SearchStrategy[Any]:
    """Schemathesis' valid and invalid cases of every operation (of ``tag`` only, if given)."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    if tag is not None:
        schema = schema.include(tag=tag)
    return st.one_of(
        schema.as_strategy(GenerationMode.POSITIVE), schema.as_strategy(GenerationMode.NEGATIVE)
    )


def fuzz_settings(examples: int) -> settings:
    """``examples`` examples from a fixed seed (reproducible), none shrunk (count, do not
    minimise), no deadline and no health check (schemathesis' cases are large and slow)."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def fuzz(app: FastAPI, requests: int, *, seed_every: int = 50) -> Report:
    """Send ``requests`` requests (schemathesis cases and hostile ones, about half each)."""
    report = Report()
    cases = openapi_cases(app)
    service: TwinService = app.state.service
    raw = SyncASGI(app, owner=False)

    @fuzz_settings(requests)
    @given(case=cases | HOSTILE)
    def run(case: schemathesis.Case[Any] | Hostile) -> None:
        if report.total().tried % seed_every == 0:  # a real document now and then: more 200s
            service.replace(tiny_document())
        _one(report, service, raw, case)

    try:
        run()
    finally:
        raw.close()
    _check_replay(report, service)
    return report


def _one(
    report: Report, service: TwinService, raw: SyncASGI, case: schemathesis.Case[Any] | Hostile
) -> None:
    if isinstance(case, Hostile):
        target, method = f"{case.method} /api/v1{case.path}", case.method
    else:
        target, method = f"{case.method} {case.path}", case.method
    tally = report.tally(target)
    tally.tried += 1
    before, time_before = service.version, service.time
    try:
        if isinstance(case, Hostile):
            headers = {**AUTH, "content-type": "application/json"}
            response: Any = raw.request(
                case.method, f"/api/v1{case.path}", params=case.params, content=case.body,
                headers=headers,
            )  # fmt: skip
        else:
            response = case.call(headers=AUTH)
    except Exception as exc:  # out of the app: what a client sees as a dropped answer
        tally.tracebacks += 1
        tally.server_errors += 1
        report.failed(f"{target}: raised {traceback.format_exception_only(exc)[-1].strip()}")
        return
    status = response.status_code
    report.statuses[status] += 1
    if status >= 500:
        tally.server_errors += 1
    if status >= 400 and not _is_problem(response):
        tally.tracebacks += 1
    if status >= 500 or (status >= 400 and not _is_problem(response)):
        report.failed(f"{target}: {status} {response.text!r}")
    elif 400 <= status < 500:
        tally.clear += 1
    elif status < 400:
        tally.accepted += 1
    if method in WRITES and status >= 400 and service.version != before:
        tally.wrongly += 1  # refused, yet the state changed
    if method == "PATCH" and status < 400 and service.time < time_before:
        tally.wrongly += 1  # accepted a batch from the past
    if method == "PATCH" and status < 400 and service.time > max(time_before, now()) + MAX_AHEAD_S:
        tally.wrongly += 1  # accepted a batch in the far future
    if not isinstance(case, Hostile):
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception:  # a failure group from schemathesis: the answer breaks the schema
            tally.violations += 1


def _is_problem(response: Any) -> bool:
    kind = response.headers.get("content-type", "")
    kind = kind[0] if isinstance(kind, list) else kind  # schemathesis: a list per header
    if not kind.startswith("application/json"):
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and isinstance(body.get("detail"), str)


def _check_replay(report: Report, service: TwinService) -> None:
    """What was stored rebuilds what is served (a restarted twin would serve the same)."""
    if service.history is None:
        return
    tally = report.tally("restart: replay the stored history")
    tally.tried += 1
    try:
        same = rebuild(service.history, None).state_json() == service.state_json()
    except Exception:
        tally.tracebacks += 1
        return
    if same:
        tally.accepted += 1
    else:
        tally.wrongly += 1
