"""One episode of the placement environment, without Gymnasium: a segment of a fill-up run.

The fill-up protocol of :func:`twinsched.sim.fillup.run_fillup` (pods arrive one at a time in a
seeded order and are placed or dropped for good): the pods before the segment are placed by a
warmup scheduler through the scheduler controller, then each pod of the segment waits at the
head of the queue for the agent's node. Pods no node can take are rejected on the way, as the
controller would, and their GPU request is charged to the next reward.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from twinsched.envs.rewards import StepTerms, energy_pct, frag_added_pct, gpu_pct, node_power_w
from twinsched.errors import TwinschedError
from twinsched.metrics.fragmentation import TypicalPods, typical_pods
from twinsched.metrics.transfer import moved_share
from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA, Scenario
from twinsched.model.datasets import data_model
from twinsched.model.state import ClusterState
from twinsched.scheduling.ai.features import (
    F32,
    FEATURE_NAMES,
    FRAG_ADDED,
    N_FEATURES,
    Scales,
    node_features,
)
from twinsched.scheduling.cache import NodeMemo
from twinsched.scheduling.controller import Binding
from twinsched.scheduling.framework import Placement, PodView, Unschedulable
from twinsched.sim.fillup import FillupRun
from twinsched.sim.scenarios import cached_scenario

LATENCY = FEATURE_NAMES.index("latency")
_NODE_COLUMNS = ("cpu_milli", "memory_mib", "gpu_count", "gpu_model", "labels", "pool")


class IneligibleActionError(TwinschedError):
    """The agent chose a node the pod cannot go to; mask actions with ``action_masks()``."""


@dataclass(frozen=True)
class Variant:
    """A loaded scenario and the typical pods of its workload (for the fragmentation features)."""

    name: str
    scenario: Scenario
    typical: TypicalPods


def load_variant(trace: str, variant: str, data: str | None) -> Variant:
    """A scenario by trace and variant (loaded once per process) and its typical pods."""
    scenario = cached_scenario(trace, variant, data)
    return Variant(variant, scenario, typical_pods(scenario.pods))


def same_nodes(variants: list[Variant]) -> int:
    """The node count shared by every variant; an error names the first one that differs."""
    first = variants[0].scenario.nodes
    for v in variants[1:]:
        nodes = v.scenario.nodes
        same = nodes.names == first.names and all(
            np.array_equal(getattr(nodes, c), getattr(first, c)) for c in _NODE_COLUMNS
        )
        if not same:
            raise TwinschedError(
                f"variant '{v.name}' has a different node list ({nodes.n} nodes) than "
                f"'{variants[0].name}' ({first.n} nodes): one environment needs one node list"
            )
    return first.n


class FeatureRows:
    """Feature rows of every node per pod class, refreshed only where nodes changed.

    Exact because a row depends only on its node's state and the pod's class (a
    :class:`NodeMemo`, as the AI scheduler keeps its scores).
    """

    def __init__(self, state: ClusterState, typical: TypicalPods) -> None:
        self.state, self.typical, self.scales = state, typical, Scales.of(state)
        self._memo = NodeMemo(self._rows)

    def _rows(self, state: ClusterState, pod: PodView, nodes: I64) -> tuple[F32, I64]:
        return node_features(state, pod, nodes, self.typical, self.scales)

    def get(self, pod: PodView) -> tuple[F32, I64]:
        """Rows ``(n_nodes, N_FEATURES)`` and the GPU a share pod would take on each node."""
        rows, share = self._memo.get(self.state, pod)
        return rows, share


class Episode:
    """A fill-up segment: ``current`` is the pod waiting for a node, ``None`` once done."""

    def __init__(
        self,
        variant: Variant,
        *,
        fill_seed: int,
        start_fraction: float,
        segment_length: int | None,
        warmup: str,
        target_pct: float,
        validate: bool = False,
    ) -> None:
        sc = variant.scenario
        self.variant = variant.name
        self.run = FillupRun(
            sc, warmup, fill_seed, target_pct=target_pct, validate=validate,
            track=False, explain=False,
        )  # fmt: skip
        self.pods, self.state, self.control = self.run.pods, self.run.state, self.run.control
        self.views = self.control.views
        self.features = FeatureRows(self.state, variant.typical)
        self._data = data_model(sc, self.pods)  # None without data sets
        self.total_gpu = sc.nodes.total_gpu_milli
        nodes = sc.nodes
        self._dynamic_w = float((nodes.power_peak_w - nodes.power_idle_w).sum())
        self.start = int(start_fraction * self.pods.n)
        end = self.pods.n if segment_length is None else self.start + segment_length
        self.end = min(end, self.pods.n)
        self.fallbacks = 0
        self.current: int | None = None
        self._unscheduled_milli = 0
        for _ in range(self.start):  # the warmup scheduler places the pods before the segment
            self.run.step(window=1)
        self.rejected = 0  # in the segment
        self.cursor = self.start
        self._advance()

    @property
    def arrived_milli(self) -> int:
        return self.run.arrived_milli

    @property
    def done(self) -> bool:
        return self.current is None

    @property
    def exhausted(self) -> bool:
        """Every pod of the fill-up is decided (the episode terminates rather than truncates)."""
        return self.cursor >= self.pods.n

    def mask(self) -> BoolA:
        """Eligible nodes for the current pod (the next one after the segment once done)."""
        if self.cursor >= self.pods.n:
            return np.zeros(self.state.nodes.n, dtype=bool)
        return self.control.eligible(self.views[self.cursor])

    def observe(self) -> tuple[F32, BoolA]:
        """Fresh copies of the current pod's feature rows and eligible-node mask."""
        if self.cursor >= self.pods.n:
            return np.zeros((self.state.nodes.n, N_FEATURES), dtype=np.float32), self.mask()
        rows, _ = self.features.get(self.views[self.cursor])
        return rows.copy(), self.mask().copy()

    def place(self, node: int, *, fallback: bool = False) -> StepTerms:
        """Bind the current pod to ``node``, move on to the next placeable pod, return the terms."""
        if self.current is None:
            raise TwinschedError("the episode is over: call reset()")
        i, pod, state = self.current, self.views[self.current], self.state
        rows, share_gpu = self.features.get(pod)
        known = 0 <= node < state.nodes.n
        gpus = (int(share_gpu[node]),) if pod.is_share and known else ()  # Bind picks the rest
        before = self._node_power(node) if known else 0.0
        outcome = self.control.commit(i, Placement(node, gpus), fallback=fallback)
        if isinstance(outcome, Unschedulable):
            if not fallback:
                raise IneligibleActionError(
                    f"node {node} is not eligible for pod {self.pods.names[i]} "
                    f"({int(self.mask().sum())} eligible): mask actions with action_masks() "
                    "or observation['action_mask']"
                )
            raise TwinschedError(f"the fallback could not place pod {self.pods.names[i]}")
        if outcome.fallback:  # the controller's injected fallback placed it instead
            self.fallbacks += 1
            node, before = outcome.node, self._node_power(outcome.node, less=pod)
        self._settle(i, outcome)
        placed = StepTerms(
            allocation=gpu_pct(pod.gpu_request, self.total_gpu),
            fragmentation=frag_added_pct(float(rows[node, FRAG_ADDED]), self.total_gpu),
            energy=energy_pct(self._node_power(node) - before, self._dynamic_w),
            latency=float(rows[node, LATENCY]),
            bytes_moved=self._moved_pct(i, node),
        )
        self.cursor = i + 1
        self._advance()
        unscheduled = gpu_pct(self._unscheduled_milli, self.total_gpu)
        self._unscheduled_milli = 0
        return replace(placed, unscheduled=unscheduled)

    def _moved_pct(self, pod: int, node: int) -> float:
        """% of the pod's input bytes that cross the links to ``node`` (0 without data)."""
        if self._data is None:
            return 0.0
        return 100.0 * float(moved_share(self._data, pod, np.array([node]))[0])

    def info(self) -> dict[str, float | int | str]:
        """Progress figures of the run so far."""
        return {
            "gpu_alloc_ratio_pct": gpu_pct(self.state.allocated_gpu_milli, self.total_gpu),
            "arrived_pct": gpu_pct(self.arrived_milli, self.total_gpu),
            "rejected": self.rejected,
            "fallbacks": self.fallbacks,
            "pod": self.cursor,
            "start": self.start,
            "variant": self.variant,
        }

    def _advance(self) -> None:
        """Let pods arrive until one has an eligible node; reject those that have none."""
        self.current = None
        while self.cursor < self.end:
            i = self.run.arrive()
            if self.mask().any():
                self.current = i
                return
            self._settle(i, self.control.explain(self.views[i]))
            self._unscheduled_milli += int(self.views[i].gpu_request)
            self.cursor += 1

    def _settle(self, i: int, outcome: Binding | Unschedulable) -> None:
        self.run.settle(i, outcome)
        self.rejected += isinstance(outcome, Unschedulable)

    def _node_power(self, node: int, less: PodView | None = None) -> float:
        """The node's power now, or before ``less`` (bound there) was bound."""
        n, s = self.state.nodes, self.state
        gpu_cap = float(n.gpu_count[node] * MILLI_PER_GPU)
        cpu, gpu = (less.cpu_milli, less.gpu_request) if less is not None else (0, 0)
        return node_power_w(
            float(n.power_idle_w[node]),
            float(n.power_peak_w[node]),
            float(n.cpu_milli[node] - s.cpu_free[node] - cpu),
            float(n.cpu_milli[node]),
            gpu_cap - float(s.gpu_idle[node]) - gpu,
            gpu_cap,
        )
