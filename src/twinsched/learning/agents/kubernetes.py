"""An actuator for a Kubernetes Deployment: replicas and node selector, via the official client.

The client is imported only when no API object is passed in
(``pip install 'twinsched[kubernetes]'``). The patch is a strategic merge patch (the
official client sends a dict body as ``application/strategic-merge-patch+json``); the node
selector carries ``"$patch": "replace"`` so that the pods' selector becomes exactly the
action's, not a merge of the old and new labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twinsched.extras import require
from twinsched.learning.agents.agent import Action


def deployment_patch(action: Action) -> dict[str, Any]:
    """The strategic-merge patch that sets replicas and, when the action has one, replaces
    the pods' node selector (``{}`` clears it; None leaves it as it is)."""
    if action.nodepool is not None:  # the agent file's schema refuses it before this
        raise ValueError("the Kubernetes actuator places by node labels: put the nodepool's "
                         "label in node_selector")  # fmt: skip
    patch: dict[str, Any] = {"spec": {"replicas": action.replicas}}
    if action.node_selector is not None:
        selector = {"$patch": "replace", **action.node_selector}
        patch["spec"]["template"] = {"spec": {"nodeSelector": selector}}
    return patch


@dataclass
class KubernetesActuator:
    """Patches one Deployment; ``api`` is an ``AppsV1Api`` (built from kubeconfig if None)."""

    deployment: str
    namespace: str = "default"
    api: Any = None
    applied: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, action: Action, now: float) -> None:
        patch = deployment_patch(action)
        self._client().patch_namespaced_deployment(self.deployment, self.namespace, patch)
        self.applied.append(patch)

    def _client(self) -> Any:
        if self.api is None:
            why = "the Kubernetes actuator needs the official client"
            client = require("kubernetes.client", "kubernetes", why)
            config = require("kubernetes.config", "kubernetes", why)
            config.load_kube_config()  # type: ignore[no-untyped-call, unused-ignore]
            self.api = client.AppsV1Api()
        return self.api
