"""deploy/grafana/twinsched.json at 1,000 nodes: every panel over per-node series is bounded
(top-k, an aggregate per nodepool, or the nodes picked in a variable), checked statically on
every query and by running the node panels' queries with ``promtool test rules`` over 1,000
nodes in 4 nodepools (the answers computed here, node by node)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.test_monitoring import DASHBOARD, promtool

NODES, POOLS, K = 1000, 4, 10
GRID = 1 / 1024  # node values on this grid; each nodepool's mean falls on it too
PER_NODE = re.compile(r"\b(twinsched_twin_node_metric|twinsched_node_[a-z_]+)\b")
AGGREGATE = re.compile(r"\b(sum|avg|max|min|count)\b(\s+by\s*\([^)]*\))?\s*\(")
VARIABLES = {"twin_job": "twinsched-twin", "vte_job": "twinsched-vte", "metric": "cpu_util",
             "k": str(K), "node": "node-0007|node-0421", "nodepool": ".*"}  # fmt: skip


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())  # type: ignore[no-any-return]


def targets() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in dashboard()["panels"] for t in p.get("targets", [])]


def bounded(expr: str) -> bool:
    """Whether a query over per-node series draws a bounded number of lines."""
    return bool(
        "topk($k" in expr
        or 'node=~"$node"' in expr
        or re.match(AGGREGATE, expr.strip().lstrip("("))
    )


def test_every_per_node_query_is_bounded() -> None:
    per_node = [(title, e) for title, e in targets() if PER_NODE.search(e)]
    assert len(per_node) >= 12
    loose = [(title, e) for title, e in per_node if not bounded(e)]
    assert loose == [], loose
    names = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert names["metric"]["multi"] is False  # one metric per axis, never a regex of all
    assert names["node"]["multi"] is True and names["k"]["current"]["value"] == str(K)
    for aggregate in ("avg", "max", "min"):  # per-tier aggregates of the twin's node metric
        assert any(e.startswith(f"{aggregate} by (nodepool) (twinsched_twin_node_metric")
                   for _, e in per_node), aggregate  # fmt: skip


def _value(i: int) -> float:
    """Node i's cpu_util: distinct values on a 1/1024 grid."""
    return ((i * 389) % NODES) / 1024


def _pool(i: int) -> str:
    return f"pool-{i % POOLS}"


def _series() -> list[dict[str, str]]:
    out = []
    for i in range(NODES):
        node = f'node="node-{i:04d}"'
        out.append({"series": f'twinsched_twin_node_metric{{job="twinsched-twin", {node}, '
                              f'metric="cpu_util"}}', "values": f"{_value(i)}x5"})  # fmt: skip
        out.append({"series": f'twinsched_twin_node_info{{job="twinsched-twin", {node}, '
                              f'nodepool="{_pool(i)}"}}', "values": "1x5"})  # fmt: skip
        gpus = 8 if i % 2 == 0 else 0  # half the VTE's nodes have GPUs
        used = (i * 37) % 8001 if gpus else 0
        labels = f'job="twinsched-vte", {node}, nodepool="{_pool(i)}"'
        out.append({"series": f"twinsched_node_gpu_capacity{{{labels}}}", "values": f"{gpus}x5"})
        out.append({"series": f"twinsched_node_gpu_milli_allocated{{{labels}}}",
                    "values": f"{used}x5"})  # fmt: skip
    return out


def _expand(expr: str) -> str:
    for name in sorted(VARIABLES, key=len, reverse=True):  # $nodepool before $node
        expr = expr.replace(f"${name}", VARIABLES[name])
    return expr


def _labels(**labels: str) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _expected() -> dict[str, list[dict[str, Any]]]:
    """Per panel title: the samples its first query answers (computed node by node)."""
    twin = {"job": "twinsched-twin", "metric": "cpu_util"}
    top = sorted(range(NODES), key=_value, reverse=True)[:K]
    pools: dict[str, list[float]] = {}
    for i in range(NODES):
        pools.setdefault(_pool(i), []).append(_value(i))
    means = {p: sum(v) / len(v) for p, v in pools.items()}
    assert all((m / GRID).is_integer() for m in means.values()), means
    gpu = {i: ((i * 37) % 8001) / 1000 / 8 for i in range(0, NODES, 2)}
    busy = {p: sum(1 for i in gpu if _pool(i) == p and gpu[i] > 0.9) for p in ("pool-0", "pool-2")}
    top_gpu = sorted(gpu, key=lambda i: (gpu[i], -i), reverse=True)[:K]
    metric = "twinsched_twin_node_metric"
    return {
        "Top $k nodes by $metric": [
            {"labels": metric + _labels(**twin, node=f"node-{i:04d}"), "value": _value(i)}
            for i in top
        ],
        "$metric per nodepool: mean": [
            {"labels": _labels(nodepool=p), "value": mean} for p, mean in means.items()
        ],
        "$metric per nodepool: max and min": [
            {"labels": _labels(nodepool=p), "value": max(v)} for p, v in pools.items()
        ],
        "$metric of the chosen nodes": [
            {"labels": metric + _labels(**twin, node=f"node-{i:04d}"), "value": _value(i)}
            for i in (7, 421)
        ],
        "Top $k nodes by GPU allocated (VTE)": [
            {
                "labels": _labels(job="twinsched-vte", node=f"node-{i:04d}", nodepool=_pool(i)),
                "value": gpu[i],
            }
            for i in top_gpu
        ],
        "Nodes per nodepool by GPU allocated (VTE)": [
            {"labels": _labels(nodepool=p), "value": n} for p, n in busy.items() if n
        ],
    }


def test_node_panels_answer_at_1000_nodes(tmp_path: Path) -> None:
    expected = _expected()
    panels = {p["title"]: p for p in dashboard()["panels"]}
    cases = []
    for title, samples in expected.items():
        expr = _expand(panels[title]["targets"][0]["expr"])
        if "mean" in title:  # Prometheus averages incrementally: off in the last bits
            expr = f"round({expr}, {GRID})"
        assert len(samples) <= K, title  # what the panel draws stays readable
        cases.append({"expr": expr, "eval_time": "2m", "exp_samples": samples})
    (tmp_path / "none.yml").write_text("groups: []\n")
    spec = {"rule_files": ["none.yml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": _series(),
                       "promql_expr_test": cases}]}  # fmt: skip
    (tmp_path / "grafana_test.yml").write_text(yaml.safe_dump(spec, width=1000))
    done = promtool("test", "rules", str(tmp_path / "grafana_test.yml"))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
