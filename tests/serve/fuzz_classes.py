"""The probe's classes of issue 31 as strategies for the service's fuzzer (``fuzzing.py``).

Node updates interleaved with binds (taints, shrinks, removals, returns, duplicate names),
filter calls with huge or many node-selector labels, and journals damaged line by line
(replayed at start: a clear error naming file and line, or a sound state, never a
traceback).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz_table import Tally
from tests.serve.test_journal import GOOD, NODE, POD
from tests.serve.test_protocol import NODES, pod
from twinsched.errors import TraceFormatError
from twinsched.serve import invariants
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.journal import Journal

TAINT = {"taints": [{"key": "maint", "value": "x", "effect": "NoSchedule"}]}
GPUS = st.sampled_from(["0", "1", "2", "4", "8", "64", "65", "-1", "1000"])


@st.composite
def node_update(draw: st.DrawFn) -> dict[str, Any]:
    """A ``POST /nodes`` body: the test nodes, some tainted, shrunk, grown, left out or
    given twice."""
    items = []
    for n in NODES:
        action = draw(st.sampled_from(["keep", "taint", "gpus", "drop", "twice"]))
        if action == "drop":
            continue
        if action == "taint":
            n = {**n, "spec": TAINT}
        elif action == "gpus":
            alloc = {**n["status"]["allocatable"], "nvidia.com/gpu": draw(GPUS)}
            n = {**n, "status": {**n["status"], "allocatable": alloc}}
        items += [n, n] if action == "twice" else [n]
    return {"items": items}


@st.composite
def labelled_pod(draw: st.DrawFn) -> dict[str, Any]:
    """A pod selecting 0..200 labels, keys up to 10 kB, fresh prefixes (to fill the table)."""
    count = draw(st.sampled_from([0, 1, 30, 63, 64, 65, 200]))
    prefix = draw(st.sampled_from(["k", "x", "y" * 10_000, "z\x00"]))
    p = pod(f"l{draw(st.integers(0, 10**6))}", cpu="100m")
    p["spec"]["nodeSelector"] = {f"{prefix}{k}": "v" for k in range(count)}
    return p


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
FIELDS = sorted({*NODE, *POD, "op", "rows", "row", "key", "node", "gpus"})


@st.composite
def damaged_journal(draw: st.DrawFn) -> str:
    """A valid journal with one line damaged: a field replaced, the line cut or garbled."""
    lines: list[Any] = json.loads(json.dumps(GOOD))
    k = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["field", "nested", "cut", "garble", "op"]))
    text = [json.dumps(x) for x in lines]
    if how == "field":
        lines[k][draw(st.sampled_from(FIELDS))] = draw(JSON)
    elif how == "nested":
        inner = lines[0]["rows"][0] if k == 0 else lines[1]["row"]
        inner[draw(st.sampled_from(FIELDS))] = draw(JSON)
        k = 0 if k == 0 else 1
    elif how == "op":
        lines[k]["op"] = draw(st.sampled_from(["explode", "NODES", "", None, 7]))
    if how in ("field", "nested", "op"):
        text[k] = json.dumps(lines[k])
    elif how == "cut":
        text[k] = text[k][: draw(st.integers(0, len(text[k]) - 1))]
    else:
        text[k] = draw(st.text(max_size=40))
    return "".join(t + "\n" for t in text)


def fuzz_journal(examples: int, folder: Path, tally: Tally) -> None:
    """Start a service on ``examples`` damaged journals: ``TraceFormatError`` is a clear
    error; a start is accepted if the state is sound; anything else is a traceback."""

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(text=damaged_journal())
    def run(text: str) -> None:
        path = folder / "state.jsonl"
        path.write_text(text)
        try:
            cluster = ServiceCluster("fgd", journal=Journal(path))
        except TraceFormatError as exc:
            outcome = "clear" if str(path) in str(exc) else "wrongly"
            tally.add(outcome, f"{exc}"[:200])
            return
        except Exception as exc:
            tally.add("tracebacks", repr(exc)[:200])
            return
        try:
            invariants.check(cluster)
            ok = all(0 <= r.gpu_count <= 64 and r.cpu_milli >= 0 for r in cluster.declared)
            tally.add("accepted" if ok else "wrongly", "a node out of range was replayed")
        except Exception as exc:
            tally.add("wrongly", repr(exc)[:200])
        finally:
            if cluster.journal is not None:
                cluster.journal.close()

    run()
