"""The parts of Kubernetes ``v1.Node`` and ``v1.Pod`` that scheduling reads, as pydantic models.

Keys are matched case-insensitively, as Go's JSON decoder does (``nodeSelector``,
``NodeSelector`` and ``nodeselector`` are one field); unknown keys are ignored; every field
the scheduler does not need is optional. Answers are written with the Kubernetes (camelCase)
names.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

Quantity = str | int | float


class FoldedModel(BaseModel):
    """A model whose keys are matched case-insensitively; unknown keys are dropped."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")
    # per model class: lower-case key -> field key (built once: it is read for every object
    # of every request, 13 times for one pod)
    _folds: ClassVar[dict[type, dict[str, str]]] = {}

    @classmethod
    def folds(cls) -> dict[str, str]:
        """Lower-case key -> the field key it is read as (alias or Python name)."""
        names = cls._folds.get(cls)
        if names is None:
            names = {n.lower(): n for n in cls.model_fields}  # Python names (populate_by_name)
            names |= {(f.alias or n).lower(): f.alias or n for n, f in cls.model_fields.items()}
            cls._folds[cls] = names
        return names

    @classmethod
    def field_of(cls, key: object) -> str | None:
        """The field key a JSON key is read as; None: the key is dropped."""
        return cls.folds().get(str(key).lower())

    @model_validator(mode="before")
    @classmethod
    def _fold_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        names = cls.folds()
        folded: dict[str, Any] = {}
        for key, value in data.items():
            name = names.get(str(key).lower())
            if name is not None:
                folded[name] = value
        return folded


class ObjectMeta(FoldedModel):
    name: str = Field(min_length=1, description="metadata.name")
    namespace: str = "default"
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class Taint(FoldedModel):
    key: str
    value: str = ""
    effect: str = Field(description="NoSchedule, PreferNoSchedule or NoExecute")


class NodeSpec(FoldedModel):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)


class NodeCondition(FoldedModel):
    type: str
    status: str


class NodeStatus(FoldedModel):
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)


class Node(FoldedModel):
    """``v1.Node``: what the scheduler reads of it."""

    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NodeList(FoldedModel):
    """``v1.NodeList``."""

    items: list[Node] = Field(default_factory=list)


class Requirement(FoldedModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(FoldedModel):
    match_expressions: list[Requirement] = Field(default_factory=list)


class NodeSelector(FoldedModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredTerm(FoldedModel):
    weight: int = Field(1, ge=1, le=100)
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeAffinity(FoldedModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredTerm] = Field(
        default_factory=list
    )


class Affinity(FoldedModel):
    node_affinity: NodeAffinity | None = None


class Toleration(FoldedModel):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class Resources(FoldedModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class Container(FoldedModel):
    name: str = ""
    resources: Resources = Field(default_factory=Resources)


class PodSpec(FoldedModel):
    containers: list[Container] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    priority: int | None = Field(None, ge=-(2**31), le=2**31 - 1, description="int32")
    node_name: str = ""


class PodStatus(FoldedModel):
    phase: str = ""


class Pod(FoldedModel):
    """``v1.Pod``: what the scheduler reads of it."""

    metadata: ObjectMeta
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)
