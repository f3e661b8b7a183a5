"""The scheduler-extender protocol's types (``k8s.io/kube-scheduler/extender/v1``).

The Go types carry no JSON tags, so kube-scheduler writes the Go field names (``Pod``,
``NodeNames``) and reads any capitalisation: requests are matched case-insensitively and
answers use the Go names (``model_dump(by_alias=True)``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, SkipValidation
from pydantic.alias_generators import to_pascal

from twinsched.serve.kube import FoldedModel, Pod

MAX_PRIORITY = 10  # MaxExtenderPriority


class GoModel(FoldedModel):
    """A protocol type: Go field names (PascalCase), matched case-insensitively."""

    model_config = ConfigDict(alias_generator=to_pascal, populate_by_name=True, extra="ignore")


class RawNodeList(FoldedModel):
    """A ``v1.NodeList`` whose items are read one by one (and cached) by the service."""

    items: list[dict[str, Any]] = Field(default_factory=list, description="v1.Node objects.")


class ExtenderArgs(GoModel):
    """The body of ``filter`` and ``prioritize``."""

    pod: Pod
    nodes: RawNodeList | None = Field(None, description="Sent when nodeCacheCapable is false.")
    node_names: SkipValidation[list[str] | None] = Field(
        None, description="Sent when nodeCacheCapable is true."
    )  # checked by serve/wire.py without a pydantic validator per name


class ExtenderFilterResult(GoModel):
    """The answer of ``filter``: the nodes that pass, in the request's form."""

    nodes: dict[str, Any] | None = Field(None, description="A v1.NodeList of the passing nodes.")
    node_names: list[str] | None = None
    failed_nodes: dict[str, str] = Field(default_factory=dict)
    failed_and_unresolvable_nodes: dict[str, str] = Field(default_factory=dict)
    error: str = ""


class HostPriority(GoModel):
    """One node's score in the answer of ``prioritize`` (a JSON list of these)."""

    host: str
    score: int = Field(ge=0, le=MAX_PRIORITY)


class ExtenderBindingArgs(GoModel):
    """The body of ``bind``."""

    pod_name: str = Field(min_length=1)
    pod_namespace: str = "default"
    pod_uid: str = Field("", alias="PodUID")
    node: str = Field(min_length=1)


class ExtenderBindingResult(GoModel):
    """The answer of ``bind``: empty ``Error`` on success."""

    error: str = ""
