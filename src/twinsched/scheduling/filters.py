"""Filter plugins: which nodes can host a pod. Each is a pure function over node indices.

The order is the reporting order of reasons when no node is left, like Kubernetes'
"0/N nodes are available: 3 Insufficient cpu, ...".
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA, int_operand
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView, Reason, Unschedulable

FilterFn = Callable[[ClusterState, PodView, I64], BoolA]


def node_up(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    return state.up[nodes]


def cpu_fits(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    return state.cpu_free[nodes] >= int_operand(pod.cpu_milli)


def memory_fits(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    return state.mem_free[nodes] >= int_operand(pod.memory_mib)


def gpu_model_allowed(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    """GPU pods need a node with GPUs of an allowed model (mask 0 allows any)."""
    if pod.gpu_count == 0:
        return np.ones(nodes.size, dtype=bool)
    return model_in_mask(state.nodes.gpu_model[nodes], pod.model_mask)


def model_in_mask(model: I64, mask: int) -> BoolA:
    """Nodes with GPUs (``model >= 0``) of a model in ``mask`` (mask 0 allows any)."""
    if mask == 0:
        return model >= 0
    allowed = (np.uint64(mask) >> np.maximum(model, 0).astype(np.uint64)) & np.uint64(1)
    ok: BoolA = (model >= 0) & (allowed == 1)
    return ok


def gpus_fit(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    """A share pod needs one GPU with its milli free; a k-GPU pod needs k whole free GPUs."""
    if pod.gpu_count == 0:
        return np.ones(nodes.size, dtype=bool)
    if pod.gpu_milli < MILLI_PER_GPU:
        return state.gpu_max_left[nodes] >= int_operand(pod.gpu_milli)  # a single GPU
    return state.gpu_whole_free[nodes] >= int_operand(pod.gpu_count)


def labels_match(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    labels = state.nodes.labels[nodes]
    req = np.uint64(pod.required_labels)
    ok: BoolA = (labels & req) == req
    return ok


def no_rejected_labels(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    ok: BoolA = (state.nodes.labels[nodes] & np.uint64(pod.rejected_labels)) == 0
    return ok


def latency_within(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    """Within the pod's latency bound of its data, and reachable from it (a partitioned
    link has infinite latency: even a pod with no bound cannot reach its data across it)."""
    return latency_ok(state.latency_ms, state, pod, nodes)


def latency_ok(latency_ms: F64, state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    """:func:`latency_within` over a given latency matrix (the scenario's, or now's)."""
    if pod.data_pool < 0:
        return np.ones(nodes.size, dtype=bool)
    latency = latency_ms[state.nodes.pool[nodes], pod.data_pool]
    if not np.isfinite(pod.max_latency_ms):
        reachable: BoolA = latency < np.inf
        return reachable
    ok: BoolA = latency <= pod.max_latency_ms
    return ok


FILTERS: tuple[tuple[Reason, FilterFn], ...] = (
    (Reason.NODE_DOWN, node_up),
    (Reason.GPU_MODEL_MISMATCH, gpu_model_allowed),
    (Reason.NODE_LABELS_MISMATCH, labels_match),
    (Reason.NODE_HAS_REJECTED_LABEL, no_rejected_labels),
    (Reason.LATENCY_TOO_HIGH, latency_within),
    (Reason.INSUFFICIENT_CPU, cpu_fits),
    (Reason.INSUFFICIENT_MEMORY, memory_fits),
    (Reason.INSUFFICIENT_GPU, gpus_fit),
)


def applicable(pod: PodView) -> list[tuple[Reason, FilterFn]]:
    """The filters that can reject this pod, in reporting order."""
    active = {"NodeDown", "InsufficientCPU", "InsufficientMemory"}
    if pod.gpu_count:
        active |= {"GpuModelMismatch", "InsufficientGPU"}
    if pod.required_labels:
        active.add("NodeLabelsMismatch")
    if pod.rejected_labels:
        active.add("NodeHasRejectedLabel")
    if pod.data_pool >= 0:  # a bound, or a partitioned link between the pod and its data
        active.add("LatencyTooHigh")
    return [(reason, fn) for reason, fn in FILTERS if reason in active]


def eligible(state: ClusterState, pod: PodView, nodes: I64) -> tuple[BoolA]:
    """All applicable filters at once (the cacheable compute for :class:`NodeMemo`).

    The same rules as :data:`FILTERS`, inlined for the hot path; a test checks they agree.
    """
    mask = fits_now(state, pod, nodes)
    mask &= static_rules(state, pod, nodes)
    return (mask,)


def fits_now(state: ClusterState, pod: PodView, nodes: I64 | slice) -> BoolA:
    """The rules on what binds and faults change: node up, CPU, memory and GPUs free
    (``nodes`` a slice: over those nodes without copying them out first)."""
    # The requests as 0-d arrays: a Python scalar operand costs NumPy more than the compare.
    mask: BoolA = state.cpu_free[nodes] >= int_operand(pod.cpu_milli)
    mask &= state.mem_free[nodes] >= int_operand(pod.memory_mib)
    if state.nodes_down:
        mask &= state.up[nodes]
    if pod.gpu_count:  # gpus_fit, on the nodes given as indices or a slice
        if pod.gpu_milli < MILLI_PER_GPU:  # a share pod uses one GPU
            mask &= state.gpu_max_left[nodes] >= int_operand(pod.gpu_milli)
        else:
            mask &= state.gpu_whole_free[nodes] >= int_operand(pod.gpu_count)
    return mask


def fits_node(state: ClusterState, pod: PodView, node: int) -> bool:
    """:func:`fits_now` for one node, with scalars (a refresh often covers a single node)."""
    # ``item``: Python scalars (a NumPy scalar compares several times slower).
    if state.cpu_free.item(node) < pod.cpu_milli or state.mem_free.item(node) < pod.memory_mib:
        return False
    if state.nodes_down and not state.up.item(node):
        return False
    if pod.gpu_count == 0:
        return True
    if pod.gpu_milli < MILLI_PER_GPU:
        return state.gpu_max_left.item(node) >= pod.gpu_milli
    return state.gpu_whole_free.item(node) >= pod.gpu_count


def static_rules(state: ClusterState, pod: PodView, nodes: I64) -> BoolA:
    """The rules on what changes only with the links, if ever: GPU model, labels, latency.

    Computed once per pod class by the filter cache (:class:`cache.EligibleMemo`), again
    after a link fault.
    """
    mask = np.ones(nodes.size, dtype=bool)
    if pod.gpu_count:
        mask &= gpu_model_allowed(state, pod, nodes)
    if pod.required_labels or pod.rejected_labels:
        mask &= labels_match(state, pod, nodes) & no_rejected_labels(state, pod, nodes)
    if pod.data_pool >= 0 and (pod.max_latency_ms != float("inf") or state.links_cut):
        mask &= latency_within(state, pod, nodes)
    return mask


def explain(state: ClusterState, pod: PodView) -> Unschedulable:
    """Why no node fits: the first filter that rejects each node, counted per reason."""
    rules = applicable(pod)
    everything = np.arange(state.nodes.n, dtype=np.int64)
    first = first_rejection(state, pod, rules, everything)
    return unschedulable(state, rules, np.bincount(first, minlength=len(rules) + 1))


def first_rejection(
    state: ClusterState, pod: PodView, rules: list[tuple[Reason, FilterFn]], nodes: I64
) -> I64:
    """Per node, the index in ``rules`` of the first rule that rejects it (``len(rules)``: none).

    Depends only on (node state, pod class), so :class:`cache.ReasonMemo` can keep it.
    """
    first = np.full(nodes.size, len(rules), dtype=np.int64)
    for i in range(len(rules) - 1, -1, -1):  # the earliest rule written last wins
        first[~rules[i][1](state, pod, nodes)] = i
    return first


# Rules on what binds never change (GPU model, labels; latency changes with the links only).
STATIC_REASONS = frozenset({Reason.GPU_MODEL_MISMATCH, Reason.NODE_LABELS_MISMATCH,
                            Reason.NODE_HAS_REJECTED_LABEL, Reason.LATENCY_TOO_HIGH})  # fmt: skip


def static_first_rejection(
    state: ClusterState, pod: PodView, rules: list[tuple[Reason, FilterFn]], nodes: I64
) -> I64:
    """:func:`first_rejection` by the rules of :data:`STATIC_REASONS` alone."""
    static = [(reason, fn) for reason, fn in rules if reason in STATIC_REASONS]
    first = first_rejection(state, pod, static, nodes)
    positions = np.array(
        [i for i, (r, _) in enumerate(rules) if r in STATIC_REASONS] + [len(rules)]
    )
    at: I64 = positions[first]  # back to positions in ``rules``
    return at


Dynamic = list[tuple[int, bool, FilterFn]]  # (position in the rules, node-up rule?, filter)


def dynamic_rules(rules: list[tuple[Reason, FilterFn]]) -> Dynamic:
    """The rules on what binds and faults change, last first, with their positions in
    ``rules`` (what :func:`first_rejection_given` evaluates; worked out once per class)."""
    return [
        (i, reason == Reason.NODE_DOWN, fn)
        for i, (reason, fn) in reversed(list(enumerate(rules)))
        if reason not in STATIC_REASONS
    ]


def first_rejection_given(
    state: ClusterState, pod: PodView, rules: list[tuple[Reason, FilterFn]], static: I64,
    nodes: I64, dynamic: Dynamic,
) -> I64:  # fmt: skip
    """:func:`first_rejection` on ``nodes``, the static rules' answer given per node
    (``static``, from :func:`static_first_rejection` over every node): only ``dynamic``
    (:func:`dynamic_rules` of ``rules``, kept per class) is evaluated, the node-up rule only
    while some node is down."""
    first = np.full(nodes.size, len(rules), dtype=np.int64)
    down = state.nodes_down
    for i, node_up_rule, fn in dynamic:
        if down or not node_up_rule:  # the earliest rule, written last, wins
            first[~fn(state, pod, nodes)] = i
    np.minimum(first, static[nodes], out=first)  # the earliest rejecting rule of either
    return first


def first_rejection_one(
    state: ClusterState, pod: PodView, static: int, node: int, dynamic: Dynamic
) -> int:
    """:func:`first_rejection_given` of one node with scalars (``static``: the static rules'
    answer there): the earliest dynamic rule that rejects it, if earlier than ``static``."""
    first, down = static, state.nodes_down
    for i, node_up_rule, fn in dynamic:
        if i < first and (down or not node_up_rule) and not _passes_one(state, pod, fn, node):
            first = i
    return first


def _passes_one(state: ClusterState, pod: PodView, fn: FilterFn, node: int) -> bool:
    """``fn`` (a rule on what binds and faults change) on one node, with scalars."""
    if fn is cpu_fits:
        return state.cpu_free.item(node) >= pod.cpu_milli
    if fn is memory_fits:
        return state.mem_free.item(node) >= pod.memory_mib
    if fn is gpus_fit:
        if pod.gpu_count == 0:
            return True
        if pod.gpu_milli < MILLI_PER_GPU:
            return state.gpu_max_left.item(node) >= pod.gpu_milli
        return state.gpu_whole_free.item(node) >= pod.gpu_count
    if fn is node_up:
        return bool(state.up.item(node))
    return bool(fn(state, pod, np.array([node], dtype=np.int64))[0])  # any other rule


def unschedulable(
    state: ClusterState, rules: list[tuple[Reason, FilterFn]], per_rule: I64
) -> Unschedulable:
    """The reason value from how many nodes each rule rejects first (see :func:`first_rejection`).

    ``per_rule[i]`` counts the nodes whose first rejecting rule is ``rules[i]``; an extra
    last entry, the nodes no rule rejects, is ignored.
    """
    counts = {rules[i][0]: c for i, c in enumerate(per_rule[: len(rules)].tolist()) if c}
    if not counts:
        return Unschedulable(
            Reason.NO_NODE_CHOSEN, "eligible nodes exist but the scheduler chose none"
        )
    main = max(counts, key=lambda r: counts[r])
    detail = f"0/{state.nodes.n} nodes are available: " + ", ".join(
        f"{c} {r}" for r, c in counts.items()
    )
    return Unschedulable(main, detail)


def fits_empty_cluster(state: ClusterState, pod: PodView) -> bool:
    """Could the pod run on some node of the cluster if it were empty (and every node up)?"""
    nd = state.nodes
    nodes = np.arange(nd.n, dtype=np.int64)
    mask = (nd.cpu_milli >= pod.cpu_milli) & (nd.memory_mib >= pod.memory_mib)
    if pod.gpu_count:
        mask &= gpu_model_allowed(state, pod, nodes) & (nd.gpu_count >= pod.gpu_count)
    for reason, fn in applicable(pod):
        if reason in ("NodeLabelsMismatch", "NodeHasRejectedLabel"):
            mask &= fn(state, pod, nodes)
    mask &= latency_ok(state.base_latency_ms, state, pod, nodes)  # every link up, too
    return bool(mask.any())
