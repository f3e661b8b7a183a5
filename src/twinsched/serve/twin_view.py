"""The twin as the scheduler service reads it: the rows and running pods of the mirror's state.

The service does not read the twin's document itself: :class:`~twinsched.model.mirror.Mirror`
(the one view of the twin, as the twin loop and the importers read it) turns it into a
:class:`~twinsched.model.state.ClusterState`, and the service takes its nodes (up: ``Ready``
and not cordoned) and its running pods from that state. A pod the twin says runs on a node
where the mirror could not bind it (a disagreement, counted by the mirror) is *disputed*: the
service holds it where the twin says (``serve/holding.py``: the node is then reported
over-committed or missing and takes no new pod), never elsewhere, and never silently.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.convert import gpu_indices
from twinsched.model.document import TwinDocument
from twinsched.model.events import Phase
from twinsched.model.mirror import Mirror
from twinsched.serve.convert import UNNAMED_MODEL, NodeRow, PodRow
from twinsched.serve.source import Running


def node_rows(mirror: Mirror) -> list[NodeRow]:
    """The mirror's nodes as the service reads them: labels of the pool and the node (as the
    cluster model merges them), no taints (the twin has none), ready when up."""
    assert mirror.scenario is not None, "a mirror built from a document"
    nodes, vocab, up = mirror.state.nodes, mirror.scenario.labels, mirror.state.up
    rows = []
    for n, name in enumerate(mirror.node_names):
        count, m = int(nodes.gpu_count[n]), int(nodes.gpu_model[n])
        model = (nodes.gpu_models[m] if m >= 0 else UNNAMED_MODEL) if count else ""
        rows.append(NodeRow(
            name=name, cpu_milli=int(nodes.cpu_milli[n]), memory_mib=int(nodes.memory_mib[n]),
            gpu_count=count, gpu_model=model,
            labels=frozenset(vocab.decode(int(nodes.labels[n]))), taints=frozenset(),
            ready=bool(up[n]),
        ))  # fmt: skip
    return rows


def pod_row(mirror: Mirror, i: int) -> PodRow:
    """Pod ``i`` of the mirror's state as a row (its job is its namespace)."""
    assert mirror.scenario is not None, "a mirror built from a document"
    pods, vocab, name = mirror.state.pods, mirror.scenario.labels, mirror.pod_names[i]
    models = mirror.state.nodes.gpu_models
    allowed = tuple(models[k] for k in gpu_indices(int(pods.model_mask[i])))

    def labels(kind: str) -> frozenset[str]:
        return frozenset(vocab.decode(int(getattr(pods, f"{kind}_labels")[i])))

    return PodRow(
        key=name, name=name, namespace=pods.job_names[int(pods.job[i])],
        cpu_milli=int(pods.cpu_milli[i]), memory_mib=int(pods.memory_mib[i]),
        gpu_count=int(pods.gpu_count[i]), gpu_milli=int(pods.gpu_milli[i]),
        priority=int(pods.priority[i]), models=allowed or None, required=labels("required"),
        rejected=labels("rejected"), preferred=labels("preferred"),
    )  # fmt: skip


def running_pods(
    mirror: Mirror, doc: TwinDocument, rows: dict[int, PodRow]
) -> tuple[Running, dict[str, str]]:
    """The pods running in the mirror's state (node and GPUs as bound there), then the
    disputed ones: running in ``doc`` where the mirror could not bind them, with the twin's
    node and GPUs; and, per disputed pod, why (the mirror's last word on it). ``rows``: the
    pod rows made so far from this mirror (a pod's requests do not change in a mirror)."""
    state, out = mirror.state, {}

    def row(i: int) -> PodRow:
        got = rows.get(i)
        if got is None:
            got = rows[i] = pod_row(mirror, i)
        return got

    running = np.flatnonzero(state.phase == Phase.RUNNING).tolist()
    nodes, masks = state.pod_node[running].tolist(), state.pod_gpus[running].tolist()
    for i, n, mask in zip(running, nodes, masks, strict=True):
        out[mirror.pod_names[i]] = (row(i), mirror.node_names[n], tuple(gpu_indices(mask)))
    why = {d.subject: f"{d.kind}: {d.detail}" for d in mirror.disagreements.recent}
    disputed = {}
    for job in doc.jobs:
        for pod in job.pods:
            if pod.phase != "Running" or pod.node is None or pod.id in out:
                continue
            out[pod.id] = (row(mirror.pod_index[pod.id]), pod.node, tuple(pod.gpus))
            disputed[pod.id] = why.get(pod.id, "the mirror could not bind it there")
    return out, disputed
