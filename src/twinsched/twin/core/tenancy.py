"""Namespaces in the twin: an object's namespace is written in its id, as Kubernetes names it.

A pod or job id ``NS/NAME`` is in namespace ``NS``; an id without a ``/`` is in ``default``
(the convention of the kube-state-metrics mirror, ``traces/kube_state_metrics.object_id``,
so a mirrored cluster's namespaces are the twin's). Scenarios and twin documents need no new
field: every trace and document already carries its namespaces this way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from twinsched.model.document import TwinDocument

DEFAULT_NAMESPACE = "default"
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def namespace_of(object_id: str) -> str:
    """The namespace of a pod or job id: the part before its first ``/`` when that is a
    DNS-1123 label, else ``default``."""
    head, slash, _ = object_id.partition("/")
    return head if slash and _LABEL.match(head) else DEFAULT_NAMESPACE


def namespace_pods(doc: TwinDocument, namespace: str) -> Iterator[dict[str, Any]]:
    """The pods of ``namespace`` with their job id (shaped as ``PodView``)."""
    for job in doc.jobs:
        for pod in job.pods:
            if namespace_of(pod.id) == namespace:
                yield {"job": job.id, **pod.model_dump()}


def namespace_counts(doc: TwinDocument) -> dict[str, int]:
    """Pods per namespace, sorted by namespace."""
    counts: dict[str, int] = {}
    for job in doc.jobs:
        for pod in job.pods:
            space = namespace_of(pod.id)
            counts[space] = counts.get(space, 0) + 1
    return dict(sorted(counts.items()))
