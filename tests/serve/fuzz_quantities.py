"""Hostile quantities and GPU models (issue 31, classes 2 and 4) for the service fuzzer.

* quantities: huge exponents (``1e999999``), long mantissas (up to 200,000 digits), odd or
  broken suffixes (``KiB``, ``ki``, ``e3Mi``, a NUL), JSON numbers of any size, on every
  resource of a pod (``filter``, ``prioritize``, ``/pods``) or a node (a call's ``Nodes``,
  ``/nodes``), and pods of up to 3,000 containers;
* GPU models: a call's ``Nodes`` of 1-70 nodes, one GPU model each (``gmNN`` has ``mNN``),
  and a pod asking for one of them, for ``m63``/``m64`` or for a model no node has. A node
  of another model in the answer is a wrong placement (:func:`placed_outside`).
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st

from tests.serve.test_protocol import node, pod

MODEL_LABEL = "nvidia.com/gpu.product"
RESOURCES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "twinsched.io/gpu-milli"])
MANTISSA = st.sampled_from(["1", "9.99", ".5", "1.", "-1", "+7", "0", ""])
EXPONENT = st.builds(
    "{}{}{}".format, MANTISSA, st.sampled_from(["e", "E", "e+", "e-", "E-", "e0000"]),
    st.integers(0, 10**7) | st.sampled_from([99, 100, 999999, 1000000]),
)  # fmt: skip
LONG = st.builds(
    "{}{}{}".format, st.sampled_from(["", "0.", "1.", "-"]),
    st.integers(1, 200_000).map(lambda n: "9" * n), st.sampled_from(["", "m", "Ki", "e-50"]),
)  # fmt: skip
SUFFIX = st.builds(
    "{}{}".format, st.sampled_from(["1", "1.5", ".5", "16", "9999"]),
    st.sampled_from(["Ki", "ki", "KI", "KiB", "Gi ", " Gi", "G\x00", "Ei", "E", "e", "µ", "p",
                     "k8", "e3Mi", "1e3m", "mm", "Mi1", "\u0661", "e+", "i"]),
)  # fmt: skip
NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**300), 10**300)
QUANTITY: st.SearchStrategy[Any] = EXPONENT | LONG | SUFFIX | NUMBERS


@st.composite
def quantity_case(draw: st.DrawFn, names: list[str], verb: str) -> tuple[str, bytes]:
    """Path and body of a POST with hostile quantities."""
    requests = draw(st.dictionaries(RESOURCES, QUANTITY, min_size=1, max_size=4))
    where = draw(st.sampled_from(["pod", "pods", "node", "nodes", "containers"]))
    if where == "node" or where == "nodes":
        n = node(f"q-{draw(st.integers(0, 3))}", 2)
        n["status"]["allocatable"] |= requests
        if where == "nodes":
            return "/nodes", json.dumps({"items": [n]}).encode()
        body: dict[str, Any] = {"Pod": pod("q", cpu="1"), "Nodes": {"items": [n]}}
        return f"/{verb}", json.dumps(body).encode()
    p = pod(f"q-{draw(st.integers(0, 3))}", **requests)
    if where == "containers":
        p["spec"]["containers"] *= draw(st.integers(2, 3000))
    if where == "pods":
        return "/pods", json.dumps(p).encode()
    return f"/{verb}", json.dumps({"Pod": p, "NodeNames": names}).encode()


@st.composite
def models_case(draw: st.DrawFn, verb: str) -> tuple[str, bytes, frozenset[str]]:
    """Path, body and the nodes that may pass, for a pod asking for one GPU model among
    many nodes' models (or for one no node has)."""
    count = draw(st.integers(1, 70))
    nodes = []
    for k in range(count):
        n = node(f"gm{k:02d}", 1)
        n["metadata"]["labels"][MODEL_LABEL] = f"m{k:02d}"
        nodes.append(n)
    asked = draw(st.sampled_from(["nowhere", "m00", f"m{count - 1:02d}", "m62", "m63", "m64"]))
    p = pod(f"gm-{asked}", **{"nvidia.com/gpu": "1"})
    p["spec"]["nodeSelector"] = {MODEL_LABEL: asked}
    allowed = frozenset({f"g{asked}"} if asked != "nowhere" and int(asked[1:]) < count else ())
    body = {"Pod": p, "Nodes": {"items": nodes}}
    return f"/{verb}", json.dumps(body).encode(), allowed


def placed_outside(allowed: frozenset[str], answer: Any) -> set[str]:
    """The nodes a filter or prioritize answer passes or chooses that are not ``allowed``."""
    if isinstance(answer, list):  # prioritize: [{"Host": ..., "Score": ...}]
        chosen = {h.get("Host") for h in answer if isinstance(h, dict)}
    elif isinstance(answer, dict):
        items = (answer.get("Nodes") or {}).get("items") or []
        chosen = {i["metadata"]["name"] for i in items} | set(answer.get("NodeNames") or [])
    else:
        chosen = set()
    return {str(c) for c in chosen} - allowed
