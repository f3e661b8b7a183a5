"""Hostile and schema-driven requests to the scheduler service, counted per endpoint.

Half the requests come from schemathesis (valid and invalid cases of the OpenAPI), half are
hostile bodies written here: resource quantities that are not numbers, overflow, are
negative or absurd (``1e400``, ``-1Gi``, 30 digits), names with NUL or 10 kB long, deep
nesting, keys in odd capitalisation, bodies that are not JSON, binds of unknown pods or
nodes, and issue 31's classes (``fuzz_classes.py``: huge exponents, long mantissas, odd
suffixes; up to 70 GPU models, where an answer passing another model's node is stored
wrongly). An answer after more than 1 s counts as slow (the event loop held). After each
request the cluster's invariants are checked (no CPU, memory or GPU
over-commit, conservation): a request that breaks them, or a refused bind that changed the
bindings, counts as "stored wrongly". Shared by ``tests/serve/test_fuzz_hostile.py`` (small
budget) and ``bench/fuzz_serve.py`` (the rows in ``docs/reliability.md``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode

from tests.fuzz_table import HEADER, Tally
from tests.serve.conftest import slice_of_openb
from tests.serve.fuzz_classes import labelled_pod, node_update
from tests.serve.fuzz_quantities import models_case, placed_outside, quantity_case
from tests.serve.test_protocol import AUTH, NODES, TOKEN, pod
from tests.twin.conftest import SyncASGI
from tests.twin.process import running_twin
from twinsched.model.convert import scenario_to_document
from twinsched.serve import invariants
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names, ObjectError, node_row
from twinsched.serve.kube import Node
from twinsched.serve.twin_source import TwinSource
from twinsched.twin.client import TwinClient

NAMES = [n["metadata"]["name"] for n in NODES]
JSON = {"content-type": "application/json"}
TWIN_TOKEN = "serve-fuzz-twin-token-0123456789abcdef"


EXTRA = ("lost acknowledged writes", "hangs")  # columns of this table beyond Tally's
# A request whose answer took more than this much of the process's CPU held the event loop:
# a hang. CPU, not wall time: on a shared 2-core machine a request can wait for a core far
# longer than it works (the wall-clock outliers are counted apart, in ``late``).
HANG_S = 1.0
READS = ("POST /filter", "POST /prioritize")  # no state changed: safe to ask twice


@dataclass
class Report:
    tallies: dict[str, Tally] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    lost: Counter[str] = field(default_factory=Counter)  # per target
    hangs: Counter[str] = field(default_factory=Counter)  # more than HANG_S of CPU
    late: Counter[str] = field(default_factory=Counter)  # more than HANG_S of wall time only
    acknowledged: dict[str, str] = field(default_factory=dict)  # pod key -> node, bind ""

    def tally(self, target: str) -> Tally:
        return self.tallies.setdefault(target, Tally())

    def bad(self) -> int:
        return sum(t.wrongly + t.tracebacks + t.server_errors for t in self.tallies.values()) + (
            self.lost.total() + self.hangs.total()
        )

    def table(self) -> list[str]:
        lines = [HEADER[0] + "".join(f" {c} |" for c in EXTRA), HEADER[1] + "---:|" * 2]
        for t in sorted(self.tallies):
            row = self.tallies[t].row(f"scheduler service `{t}`")
            lines.append(row + f" {self.lost[t]} | {self.hangs[t]} |")
        return lines


@dataclass(frozen=True)
class Hostile:
    method: str
    path: str
    body: bytes
    auth: bool = True
    allowed: frozenset[str] | None = None  # the only nodes an answer may pass or choose
    kind: str = ""  # an issue-31 class: counted on its own row


QUANTITIES = st.sampled_from(
    ["1e400", "-1Gi", "-1", "nan", "inf", "1" * 30, "1.5.3", "", " ", "0x10", "1Ei", "99999Ei",
     "1e-400", "5000", "1500", "0.5", "2", "100m", "1Gi", "16"]
)  # fmt: skip
RESOURCES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "twinsched.io/gpu-milli"])
NAME = st.sampled_from(["p", "a\x00b", "x" * 10_000, "", "UPPER", "ns/../x", "\u00e9\u00ff"])


def _nested(depth: int) -> bytes:
    return ('{"Pod": ' + "[" * depth + "]" * depth + ', "NodeNames": []}').encode()


# NodeNames where the reader looks for it by its bytes (serve/wire.py), and around it
LISTS = [
    '{"Pod":POD,"NodeNames":LIST}', '{"Pod":POD,"Nodes":null,"NodeNames":LIST}',
    '{"Pod":POD,"NodeNames":LIST,"x":1}', '{"Pod":POD,"NodeNames":LIST,"NodeNames":[1]}',
    '{"NodeNames":[1],"Pod":POD,"NodeNames":LIST}', '{"Pod":POD,"nodenames":null,"NodeNames":LIST}',
    '{"Node\\u004eames":LIST,"Pod":POD,"nodenames":[2],"NodeNames":LIST}',
    '{"Pod":POD,"x\\"NodeNames":LIST}', '{"Pod":POD,"x":{"NodeNames":LIST}}',
    '{"Pod":POD,"NodeNames":LIST', '{"Pod":POD,"NodeNames":LIST}}',
    '{"Pod":POD,"NodeNames":LIST]}', '{"Pod":POD,"NodeNames":LIST,}',
    '{"Pod":POD,"NodeNames": LIST }', '{"Pod":POD,"NodeNames":[LIST]}',
]  # fmt: skip


@st.composite
def hostile(draw: st.DrawFn, names: list[str]) -> Hostile:
    kind = draw(st.sampled_from(["pod", "nodes", "bind", "deep", "raw", "case", "names",
                                 "update", "labels", "update", "labels"]))  # fmt: skip
    verb = draw(st.sampled_from(["filter", "prioritize"]))
    if kind == "update":  # node updates interleaved with the binds (issue 31, class 1)
        return Hostile("POST", "/nodes", json.dumps(draw(node_update())).encode())
    if kind == "labels":  # huge or many selector labels (class 3)
        body = {"Pod": draw(labelled_pod()), "NodeNames": names}
        return Hostile("POST", f"/{verb}", json.dumps(body).encode())
    if kind == "pod":
        requests = draw(st.dictionaries(RESOURCES, QUANTITIES, max_size=3))
        p = pod(draw(NAME), **requests)
        body = {"Pod": p, "NodeNames": draw(st.lists(st.sampled_from([*names, "nowhere"])))}
        return Hostile("POST", f"/{verb}", json.dumps(body).encode())
    if kind == "names":
        chosen = draw(st.lists(st.sampled_from([*names, "nowhere", 7, None]), max_size=6))
        text = draw(st.sampled_from(LISTS)).replace("LIST", json.dumps(chosen))
        text = text.replace("POD", json.dumps(pod(draw(NAME), cpu="1")))
        return Hostile("POST", f"/{verb}", text.encode())
    if kind == "nodes":
        alloc = draw(st.dictionaries(RESOURCES, QUANTITIES, max_size=3))
        node = {"metadata": {"name": draw(NAME)}, "status": {"allocatable": alloc}}
        body = {"Pod": pod("n", cpu="1"), "Nodes": {"items": [node]}}
        if draw(st.booleans()):
            return Hostile("POST", "/nodes", json.dumps({"items": [node]}).encode())
        return Hostile("POST", f"/{verb}", json.dumps(body).encode())
    if kind == "bind":
        bind = {"PodName": draw(NAME), "PodNamespace": "ns", "PodUID": draw(NAME),
                "Node": draw(st.sampled_from([*names, "nowhere", ""]))}  # fmt: skip
        return Hostile("POST", "/bind", json.dumps(bind).encode(), auth=draw(st.booleans()))
    if kind == "deep":
        return Hostile("POST", f"/{verb}", _nested(draw(st.integers(50, 100_000))))
    if kind == "raw":
        return Hostile("POST", f"/{verb}", draw(st.binary(max_size=200)))
    keys = draw(st.sampled_from([("pod", "nodenames"), ("POD", "NODES"), ("Pod", "Nodes")]))
    return Hostile("POST", f"/{verb}", json.dumps({keys[0]: pod("c"), keys[1]: 7}).encode())


@st.composite
def hostile_31(draw: st.DrawFn, names: list[str]) -> Hostile:
    """Issue 31's classes (``fuzz_classes.py``), each counted on its own rows."""
    verb = draw(st.sampled_from(["filter", "prioritize"]))
    if draw(st.booleans()):
        return Hostile("POST", *draw(quantity_case(names, verb)), kind="quantities")
    path, body, allowed = draw(models_case(verb))
    return Hostile("POST", path, body, allowed=allowed, kind="GPU models")


@contextlib.contextmanager
def twin_source(folder: Path) -> Iterator[TwinSource]:
    """A real twin process holding the first 8 nodes of openb ``default`` (no pods), read
    by a :class:`TwinSource` that asks it before every filter call."""
    small = slice_of_openb(8)
    with running_twin(folder, TWIN_TOKEN) as process, TwinClient(process.url, TWIN_TOKEN) as c:
        c.put_state(scenario_to_document(replace(small, pods=small.pods.take(np.zeros(0, int)))))
        source = TwinSource(TwinClient(process.url, TWIN_TOKEN), max_age=0)
        try:
            yield source
        finally:
            source.close()


def make_cluster(twin: TwinSource | None = None) -> tuple[ServiceCluster, Any]:
    """The service's cluster over the four test nodes, or over the twin's nodes."""
    if twin is not None:
        return ServiceCluster("fgd", capacity=64, source=twin, validate=True), []
    cluster = ServiceCluster("fgd", capacity=64, validate=True)
    rows = [node_row(Node.model_validate(n), Names()) for n in NODES]
    return cluster, rows


def fuzz(requests: int, *, derandomize: bool = True, twin: TwinSource | None = None) -> Report:
    """Send ``requests`` requests (schemathesis cases, hostile ones, issue 31's classes);
    with ``twin``, the service reads its state from that twin (``POST /nodes`` answers 409)."""
    report = Report()
    cluster, rows = make_cluster(twin)
    names = cluster.table.nodes.names if twin is not None and cluster.table else NAMES
    app = create_app(cluster, Names(), TOKEN)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    cases = schema.as_strategy(GenerationMode.POSITIVE) | schema.as_strategy(
        GenerationMode.NEGATIVE
    )
    raw = SyncASGI(app)
    both = cases | hostile(list(names))  # a quarter of the requests: issue 31's classes
    mixed = st.integers(0, 3).flatmap(lambda k: hostile_31(list(names)) if k == 0 else both)

    @settings(
        max_examples=requests, derandomize=derandomize, database=None, deadline=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(case=mixed)
    def run(case: Any) -> None:
        if rows and sum(t.tried for t in report.tallies.values()) % 40 == 0:
            with contextlib.suppress(ObjectError):  # (pods may select too many labels)
                cluster.set_nodes(rows)  # known nodes again now and then: more decisions
        _one(report, cluster, raw, case)

    try:
        run()
    finally:
        raw.close()
    return report


def _one(report: Report, cluster: ServiceCluster, raw: SyncASGI, case: Any) -> None:
    target = f"{case.method} {case.path}"
    if isinstance(case, Hostile) and case.kind:
        target += f" ({case.kind})"
    tally = report.tally(target)
    tally.tried += 1
    before = cluster.bindings()

    def send() -> Any:
        if isinstance(case, Hostile):
            headers = {**JSON, **(AUTH if case.auth else {})}
            return raw.request(case.method, case.path, content=case.body, headers=headers)
        return case.call(headers=AUTH)

    started, cpu = time.perf_counter(), time.process_time()
    try:
        response = send()
    except Exception as exc:  # out of the app: a client sees a dropped connection
        tally.tracebacks += 1
        tally.server_errors += 1
        report.examples.append(f"{target}: {exc!r:.200}")
        return
    took, worked = time.perf_counter() - started, time.process_time() - cpu
    if worked > HANG_S and target.startswith(READS):
        # the process's CPU counts every thread (a pause of the collector, a thread left by an
        # earlier test): a read is asked again, and a hang is one that repeats
        cpu = time.process_time()
        send()
        worked = min(worked, time.process_time() - cpu)
    if worked > HANG_S:  # the event loop held for that long
        report.hangs[target] += 1
        report.examples.append(f"{target}: {worked:.1f} s of CPU ({took:.1f} s wall)")
    elif took > HANG_S:
        report.late[target] += 1
    _acknowledged(report, cluster, case, response, target)
    status = response.status_code
    report.statuses[status] += 1
    if isinstance(case, Hostile) and case.allowed is not None and status == 200:
        outside = placed_outside(case.allowed, response.json())
        if outside:
            tally.wrongly += 1
            report.examples.append(f"{target}: passed nodes of another GPU model {outside}")
    if status >= 500:
        tally.server_errors += 1
        report.examples.append(f"{target}: {status} {response.text[:200]}")
    elif status >= 400:
        tally.clear += 1
    else:
        tally.accepted += 1
    refused_bind = case.path == "/bind" and (status >= 400 or _error(response))
    if refused_bind and cluster.bindings() != before:
        tally.wrongly += 1
        report.examples.append(f"{target}: a refused bind changed the bindings")
    if cluster.control is not None:
        try:
            invariants.check(cluster)  # the state's and the service's (serve/invariants.py)
        except Exception as exc:  # over-commit or lost resources: stored wrongly
            tally.wrongly += 1
            report.examples.append(f"{target}: invariants broken: {exc!r:.200}")


def _acknowledged(
    report: Report, cluster: ServiceCluster, case: Any, response: Any, target: str
) -> None:
    """Binds answered with no error must stay bound unless a pod update or deletion came
    (a pod can end); a node update never unbinds (issue 31, class 1)."""
    bound = cluster.bindings()
    if case.method == "DELETE" or case.path == "/pods":
        report.acknowledged = {k: n for k, n in report.acknowledged.items() if k in bound}
    lost = [k for k, n in report.acknowledged.items() if bound.get(k, ("",))[0] != n]
    if lost:
        report.lost[target] += len(lost)
        report.examples.append(f"{target}: acknowledged binds dropped: {lost[:3]}")
        for key in lost:
            del report.acknowledged[key]
    if case.path == "/bind" and response.status_code == 200 and not _error(response):
        report.acknowledged.update({k: n for k, (n, _) in bound.items()})


def _error(response: Any) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and bool(body.get("Error"))
