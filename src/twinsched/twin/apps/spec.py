"""The application spec: a name, a namespace, pod templates, a rollout strategy.

A spec is plain data (pydantic at the edge) and versioned by ``api_version``. Each template
gives its pods' requests (the twin's :class:`~twinsched.model.document.Requests`), replicas,
and where they may run: a ``tier`` (the nodes' ``tier`` label, one of :data:`TIERS`), more
node labels, the nodepool holding their data with the latency they accept, a deadline and a
priority. Templates may depend on others (``depends_on``): a template's pods enter the twin
once every pod of the templates it depends on runs; cycles are refused, naming the path.

Names are Kubernetes DNS labels (1-63 characters of ``a-z0-9-``, starting and ending with
an alphanumeric character), since they become manifest names and label values.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from twinsched.model.document import DocumentError, FieldProblem, Id, Requests
from twinsched.model.ranges import MAX_LATENCY_MS, MAX_PRIORITY, MAX_TIME_S
from twinsched.model.schema import format_path

API_VERSION = "twinsched/app-v1"
TIERS = ("edge", "fog", "cloud", "hpc")  # the continuum's tiers, as the nodes' tier label
MAX_REPLICAS = 1000  # per template
MAX_TEMPLATES = 32
MAX_LABELS = 32
DNS_LABEL = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
Name = Annotated[str, StringConstraints(min_length=1, max_length=63, pattern=DNS_LABEL)]
DEFAULT_IMAGE = "registry.k8s.io/pause:3.10"
Image = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[^\s]+$")]
LabelKey = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$"
    ),
]
LabelValue = Annotated[
    str, StringConstraints(max_length=63, pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PodTemplate(_Model):
    """One kind of pod of the application, with its replica count and constraints."""

    name: Name = Field(description="Template name, unique in the app (a DNS label).")
    replicas: int = Field(1, ge=0, le=MAX_REPLICAS, description="Pods wanted.")
    image: Image = Field(DEFAULT_IMAGE, description="Container image (Kubernetes manifests).")
    requests: Requests = Field(description="Resources each pod asks for.")
    tier: Literal["edge", "fog", "cloud", "hpc"] | None = Field(
        None, description="The tier its nodes must have (their `tier` label); null: any."
    )
    node_labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, max_length=MAX_LABELS, description="Labels its nodes must have."
    )
    data_pool: Id | None = Field(None, description="Nodepool where its data is.")
    max_latency_ms: float | None = Field(
        None, ge=0, le=MAX_LATENCY_MS, description="Largest latency to data_pool it accepts."
    )
    deadline_s: float | None = Field(
        None, gt=0, le=MAX_TIME_S,
        description="Longest a pod may run (Kubernetes: activeDeadlineSeconds); null: none.",
    )  # fmt: skip
    priority: int = Field(
        0, ge=-MAX_PRIORITY - 1, le=MAX_PRIORITY, description="Higher is scheduled first."
    )
    depends_on: list[Name] = Field(
        default_factory=list, max_length=MAX_TEMPLATES,
        description="Templates whose pods must all run before this one's enter the twin.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _cross_fields(self) -> Self:
        if "tier" in self.node_labels and self.tier not in (None, self.node_labels["tier"]):
            raise FieldProblem("node_labels.tier", f"differs from tier '{self.tier}'")
        if self.max_latency_ms is not None and self.data_pool is None:
            raise FieldProblem("max_latency_ms", "needs data_pool")
        return self

    def labels(self) -> dict[str, str]:
        """Every label its nodes must have (the tier as ``tier``)."""
        tier = {} if self.tier is None else {"tier": self.tier}
        return {**self.node_labels, **tier}

    def digest(self) -> str:
        """8 hex digits naming what a pod of this template is (replicas left out): a change
        of anything else replaces the pods, a change of replicas only scales."""
        body = self.model_dump_json(exclude={"replicas"}).encode()
        return hashlib.sha256(body).hexdigest()[:8]


class Strategy(_Model):
    """How an update replaces pods: at most ``max_unavailable`` wanted pods not running."""

    max_unavailable: int = Field(
        1, ge=1, le=MAX_REPLICAS, description="Wanted pods that may be down during a rollout."
    )


class AppSpec(_Model):
    """An application: its pod templates and rollout strategy, in a namespace."""

    api_version: Literal["twinsched/app-v1"] = Field("twinsched/app-v1", description="Spec format.")
    name: Name = Field(description="Application name (a DNS label).")
    namespace: Name = Field("default", description="Namespace (a DNS label).")
    templates: list[PodTemplate] = Field(
        min_length=1, max_length=MAX_TEMPLATES, description="Its pod templates."
    )
    strategy: Strategy = Field(default_factory=Strategy, description="Rolling update bounds.")

    @model_validator(mode="after")
    def _references(self) -> Self:
        index: dict[str, int] = {}
        for k, t in enumerate(self.templates):
            index.setdefault(t.name, k)
        for k, template in enumerate(self.templates):
            if index[template.name] != k:
                raise FieldProblem(f"templates[{k}].name", f"duplicate template '{template.name}'")
            for d, dep in enumerate(template.depends_on):
                if dep not in index:
                    problem = f"unknown template '{dep}' (templates: {', '.join(index)})"
                    raise FieldProblem(f"templates[{k}].depends_on[{d}]", problem)
        cycle = find_cycle({t.name: t.depends_on for t in self.templates})
        if cycle:
            k = index[cycle[0]]
            raise FieldProblem(f"templates[{k}].depends_on", "cycle " + " -> ".join(cycle))
        return self

    def template(self, name: str) -> PodTemplate | None:
        return next((t for t in self.templates if t.name == name), None)

    def get(self, name: str) -> PodTemplate:
        """The template named ``name`` (``KeyError`` if none)."""
        found = self.template(name)
        if found is None:
            raise KeyError(name)
        return found

    def order(self) -> list[PodTemplate]:
        """The templates, each after those it depends on (stable otherwise)."""
        done: list[str] = []
        left = list(self.templates)
        while left:
            ready = [t for t in left if all(d in done for d in t.depends_on)]
            done += [t.name for t in ready]
            left = [t for t in left if t.name not in done]
        return [t for name in done for t in self.templates if t.name == name]


def find_cycle(edges: dict[str, list[str]]) -> list[str]:
    """A dependency cycle as ``[a, b, ..., a]``, or ``[]`` when there is none."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for start in edges:
        if start not in state and (found := visit(start)):
            return found
    return []


class SpecError(DocumentError):
    """An application spec (or a change to one) is invalid; ``problems`` name the fields."""


def parse_spec(data: Any) -> AppSpec:
    """``data`` as an :class:`AppSpec`; :class:`SpecError` naming every bad field."""
    if not isinstance(data, dict):
        raise SpecError([("spec", f"must be an object, got {type(data).__name__}")])
    try:
        return AppSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(spec_problems(exc)) from None


def spec_problems(
    exc: ValidationError, prefix: tuple[str | int, ...] = ()
) -> list[tuple[str, str]]:
    """``(path, problem)`` of a validation error, cross-field problems at their own path."""
    out: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        loc: list[str | int] = [*prefix, *error["loc"]]
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            base = format_path(loc) if loc else ""
            out.append((f"{base}.{cause.path}" if base else cause.path, cause.problem))
        else:
            out.append((format_path(loc) if loc else "spec", str(error["msg"])))
    return out or [("spec", "invalid")]
