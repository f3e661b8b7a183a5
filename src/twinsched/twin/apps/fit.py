"""Whether an application fits the twin: per template against every node, per pod now.

:func:`beyond_every_node` is the spec's check (422): a template whose requests no node of the
twin could ever hold (its capacity, GPUs, GPU model, labels), naming the field and the
largest node, vectorised over the nodes. :func:`unplaced` is a change's check (409, nothing
applied): the pods a change adds, placed by the scheduling cycle (``bestfit``, in process,
on a copy of the twin's state with the pods it retires gone) in turn; those no node can take
now come back with the cycle's reason (``InsufficientCPU``, ``NodeLabelsMismatch``...).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from twinsched.model.document import Job, Pod, TwinDocument
from twinsched.scheduling.framework import Reason, Unschedulable
from twinsched.twin.apps.spec import AppSpec, PodTemplate

CHECKER = "bestfit"


@dataclass(frozen=True)
class Unplaced:
    """A pod a change would add that no node can take now, and why."""

    pod: str
    template: str
    reason: str
    detail: str


class _Nodes:
    """The twin's nodes as arrays (capacity, GPUs) with their labels and GPU models."""

    def __init__(self, doc: TwinDocument) -> None:
        nodes = [(pool, n) for pool in doc.nodepools for n in pool.nodes]
        self.cpu = np.array([n.hardware.cpu_milli for _, n in nodes], dtype=np.int64)
        self.memory = np.array([n.hardware.memory_mib for _, n in nodes], dtype=np.int64)
        self.gpus = np.array([n.hardware.gpu_count for _, n in nodes], dtype=np.int64)
        self.models = [n.hardware.gpu_model for _, n in nodes]
        self.labels = [{**pool.labels, **n.labels} for pool, n in nodes]
        self.pools = {pool.id for pool in doc.nodepools}

    def problem(self, t: PodTemplate) -> tuple[str, str] | None:
        """The first requirement of ``t`` no node meets: (field, problem), or None."""
        r = t.requests
        ok = np.ones(self.cpu.size, dtype=bool)
        for field, have, want in (("cpu_milli", self.cpu, r.cpu_milli),
                                  ("memory_mib", self.memory, r.memory_mib),
                                  ("gpu_count", self.gpus, r.gpu_count)):  # fmt: skip
            ok &= have >= want
            if not ok.any():
                return f"requests.{field}", (
                    f"asks {want}; no node of the twin has that much (largest: {int(have.max())})"
                )
        if r.gpu_models:
            ok &= np.array([m in r.gpu_models for m in self.models], dtype=bool)
            if not ok.any():
                return "requests.gpu_models", f"no node large enough has a GPU of {r.gpu_models}"
        for key, value in t.labels().items():
            ok &= np.array([labels.get(key) == value for labels in self.labels], dtype=bool)
            if not ok.any():
                field = "tier" if key == "tier" and t.tier is not None else f"node_labels.{key}"
                return field, f"no node large enough has the label {key}={value}"
        if t.data_pool is not None and t.data_pool not in self.pools:
            return "data_pool", f"unknown nodepool '{t.data_pool}' (pools: {sorted(self.pools)})"
        return None


def beyond_every_node(spec: AppSpec, doc: TwinDocument) -> list[tuple[str, str]]:
    """``(path, problem)`` for each template no node of ``doc`` could ever hold (none when
    the twin has no node yet: a deploy checks again)."""
    if not any(pool.nodes for pool in doc.nodepools):
        return []
    nodes = _Nodes(doc)
    out = []
    for k, template in enumerate(spec.templates):
        found = nodes.problem(template)
        if found is not None:
            out.append((f"templates[{k}].{found[0]}", found[1]))
    return out


def unplaced(
    doc: TwinDocument, retire: Collection[str], add: Sequence[tuple[str, Pod]]
) -> list[Unplaced]:
    """The pods of ``add`` (template name, pod) that no node of ``doc`` can take once the
    pods ``retire`` are gone and the ones before them are placed; [] when all fit."""
    # here: the replica imports every scheduler, which a twin needs only when apps change
    from twinsched.twin.controller.replica import Replica

    if not add:
        return []
    if not any(pool.nodes for pool in doc.nodepools):
        return [Unplaced(pod.id, name, str(Reason.NO_ELIGIBLE_NODE), "the twin has no node")
                for name, pod in add]  # fmt: skip
    work = doc.model_copy(deep=True)
    for job in work.jobs:
        job.pods = [p for p in job.pods if p.id not in retire]
    work.jobs.append(Job(id="apps-fit-check", pods=[pod for _, pod in add]))
    replica = Replica(work, 0, CHECKER, fallback=None)
    index = replica.mirror.pod_index
    template_of = {pod.id: name for name, pod in add}
    names = replica.pod_names
    out = []
    for i, outcome in replica.control.schedule([index[p.id] for _, p in add], explain=True):
        if isinstance(outcome, Unschedulable):
            pod = names[i]
            out.append(Unplaced(pod, template_of[pod], str(outcome.reason), outcome.detail))
    return out
