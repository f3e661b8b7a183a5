"""The service's cluster: node table, pods it was told about, bindings, and the controller.

Every call goes through :class:`~twinsched.scheduling.controller.SchedulerController`:
``filter`` reads its eligible-node mask, ``prioritize`` its decision (validated, with the
fallback), ``bind`` its Bind step. A decision is kept until the state changes, so the
filter, prioritize and bind calls of one pod's cycle cost one decision. Changes are written
to the :class:`~twinsched.serve.journal.Journal` (if any) and replayed at start.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA, Pods, single_pool_scenario
from twinsched.model.events import Arrive, NodeDown, Phase, Release
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController, arrival_order, placement_error
from twinsched.scheduling.filters import applicable, first_rejection
from twinsched.scheduling.framework import (
    DEFAULT_FALLBACK,
    Decision,
    Placement,
    Reason,
    Unschedulable,
)
from twinsched.scheduling.gpus import default_gpus
from twinsched.serve.candidates import CandidateCache
from twinsched.serve.convert import NodeRow, PodRow
from twinsched.serve.journal import Journal, encode, node_from, pod_from
from twinsched.serve.source import StateSource
from twinsched.serve.table import Table
from twinsched.sim.runs import start

UNKNOWN_NODE = "unknown to the scheduler service (not in its node table)"
_LIVE = (Phase.PENDING, Phase.RUNNING)


@dataclass
class Verdict:
    """A filter answer: the candidates that pass, and why each other one fails."""

    passing: list[str]
    failed: dict[str, str] = field(default_factory=dict)


class ServiceCluster:
    """What the service knows, changed under one lock (calls may come concurrently)."""

    def __init__(
        self,
        scheduler: str,
        *,
        seed: int = 0,
        workload: Pods | None = None,
        capacity: int = 16384,
        fallback: str | None = DEFAULT_FALLBACK,
        journal: Journal | None = None,
        source: StateSource | None = None,
    ) -> None:
        for name in (scheduler, fallback):  # a name that cannot be made fails now, not at
            if name is not None:  # the first pod (the service would start and answer errors)
                registry.check(name)
        self.scheduler_name, self.seed, self.workload = scheduler, seed, workload
        self.fallback, self.capacity = fallback, capacity
        self.lock = threading.RLock()
        self.table: Table | None = None
        self.control: SchedulerController | None = None
        self.slot: dict[str, int] = {}
        self._memo: tuple[int, int, BoolA | None, Decision] | None = None
        self._cands = CandidateCache({}, 0)
        self.journal, self.source = None, None
        if journal is not None:
            self._replay(journal)
            journal.rewrite(self.snapshot())  # compacted at every start
        self.journal = journal
        self.source = source
        self.refresh(force=True)

    # -- nodes ---------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.table is not None

    def set_nodes(self, rows: Sequence[NodeRow], *, replace: bool = True) -> bool:
        """Use these nodes; pods stay where they run. ``replace=False`` adds or updates the
        given nodes and keeps the others (a call's candidates are a subset of the cluster).
        A no-op (False) when nothing changes."""
        with self.lock:
            table = self.table
            if table is not None and not replace:
                merged = list(table.rows)
                for row in rows:
                    n = table.index.get(row.name)
                    if n is None:
                        merged.append(row)
                    elif merged[n] is not row and merged[n] != row:
                        merged[n] = row
                rows = merged
            if (
                table is not None
                and len(rows) == len(table.rows)
                and all(a is b or a == b for a, b in zip(rows, table.rows, strict=True))
            ):
                return False
            self._rebuild(list(rows), self.capacity)
            if self.journal is not None:
                self._record({"op": "nodes", "rows": [encode(r) for r in rows]})
            return True

    def _rebuild(self, rows: list[NodeRow], capacity: int) -> None:
        """A new table and controller over ``rows``, with the live pods and their bindings;
        all or nothing (the pods may need more labels than a table holds: ObjectError)."""
        old = self.table, self.control, self.slot, self._memo, self._cands
        try:
            self._build(rows, capacity)
        except TwinschedError:
            self.table, self.control, self.slot, self._memo, self._cands = old  # untouched
            raise

    def _build(self, rows: list[NodeRow], capacity: int) -> None:
        bound = self.bindings()
        pods_kept = self._live_rows()  # pods that ended are forgotten
        table = Table(rows, pods_kept, capacity)
        pods = table.pods
        scenario = single_pool_scenario("scheduler-service", table.nodes, pods, {}, table.vocab)
        workload = self.workload if self.workload is not None else pods
        self.control = start(
            scenario, pods, self.scheduler_name, self.seed, workload=workload,
            fallback=self.fallback, queue_sort=arrival_order,
        )  # fmt: skip
        self.table, self.slot, self._memo = table, {}, None
        self._cands = CandidateCache(table.index, table.nodes.n)
        for row in pods_kept:
            self._add(row)
        for key, (node, gpus) in bound.items():
            if node in table.index:
                self._bind(self.slot[key], table.index[node], gpus, check=True)
        for n, node_row in enumerate(rows):  # after the binds: a pod stays on a node gone down
            if not node_row.ready:  # NotReady or cordoned: no new pods (filters read state.up)
                self.control.state.apply(NodeDown(n))

    def _live_rows(self) -> list[PodRow]:
        """The pods pending or running, in the order they came."""
        if self.table is None or self.control is None:
            return []
        phase, rows = self.control.state.phase, self.table.rows_of_pods
        return [rows[i] for i in self.slot.values() if phase[i] in _LIVE]

    def bindings(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """Pod key -> (node name, GPUs) of every running pod."""
        if self.table is None or self.control is None:
            return {}
        state, names = self.control.state, self.table.nodes.names
        out = {}
        for key, i in self.slot.items():
            if state.phase[i] == Phase.RUNNING:
                mask = int(state.pod_gpus[i])
                gpus = tuple(g for g in range(mask.bit_length()) if mask >> g & 1)
                out[key] = (names[int(state.pod_node[i])], gpus)
        return out

    # -- pods ----------------------------------------------------------------------------------
    def pod(self, row: PodRow) -> int:
        """The pod's slot, added (pending) if new."""
        with self.lock:
            i = self.slot.get(row.key)
            if i is None:
                i = self._add(row)
                if self.journal is not None:
                    self._record({"op": "pod", "row": encode(row)})
            return i

    def _add(self, row: PodRow) -> int:
        table, control = self._need()
        if table.full:
            self._rebuild(table.rows, 2 * table.pods.n)
            table, control = self._need()
        view = table.add(row)
        control.views[view.index] = view
        control.state.apply(Arrive(view.index))
        self.slot[row.key] = view.index
        return view.index

    def _need(self) -> tuple[Table, SchedulerController]:
        if self.table is None or self.control is None:
            raise TwinschedError("no nodes known yet: start with --nodes FILE or POST /nodes")
        return self.table, self.control

    # -- the state source ----------------------------------------------------------------------
    def refresh(self, force: bool = False) -> bool:
        """Catch up with the state source, if any (the twin); whether anything changed."""
        if self.source is None:
            return False
        with self.lock:
            got = self.source.fetch(force)
            if got is None:
                return False
            rows, running = got
            self.set_nodes(rows)
            bound = self.bindings()
            for key, (node, gpus) in bound.items():
                if key not in running or running[key][1:] != (node, gpus):
                    self._release(key)
            for key, (row, node, gpus) in running.items():
                if bound.get(key) == (node, gpus):
                    continue
                i, n = self.pod(row), self._need()[0].index.get(node)
                if n is not None and self._need()[1].state.phase[i] == Phase.PENDING:
                    # the twin's word, even on a node now down: the pod runs there
                    self._bind(i, n, gpus, check=False)
            return True

    # -- the extender verbs --------------------------------------------------------------------
    def filter(self, row: PodRow, candidates: list[str]) -> Verdict:
        with self.lock:
            self.refresh()
            i = self.pod(row)
            control = self._need()[1]
            view = control.views[i]
            mask = control.eligible(view)
            hit = self._cands.get(candidates)
            known, ok = hit.nodes, mask[hit.nodes]
            names = self._need()[0].names
            passing = known[ok]
            verdict = Verdict(names[passing].tolist(), dict.fromkeys(hit.unknown, UNKNOWN_NODE))
            self._cands.keep(verdict.passing, passing)  # the prioritize call's list
            failed_idx = known[~ok]
            failed_names = names[failed_idx].tolist()
            if failed_names:
                rules = applicable(view)
                first = first_rejection(control.state, view, rules, failed_idx)
                codes = [*(str(reason) for reason, _ in rules), "NodeDown"]
                reasons = [codes[r] for r in first.tolist()]
                verdict.failed.update(zip(failed_names, reasons, strict=True))
            return verdict

    def prioritize(self, row: PodRow, candidates: list[str]) -> str | None:
        """The node the scheduler chooses among ``candidates`` (None: none); it scores
        ``MAX_PRIORITY``, the others 0."""
        with self.lock:
            i = self.pod(row)
            decision = self.decide(i, candidates)
            if not isinstance(decision, Placement):
                return None
            return self._need()[0].nodes.names[decision.node]

    def decide(self, i: int, candidates: list[str] | None = None) -> Decision:
        """The controller's decision for slot ``i`` (kept until the state changes)."""
        control = self._need()[1]
        cands = self._cands
        within = cands.within(cands.get(candidates)) if candidates is not None else None
        changes = len(control.state.changes)
        memo = self._memo
        if memo is not None and memo[:2] == (i, changes) and memo[2] is within:
            return memo[3]
        if control.state.phase[i] != Phase.PENDING:
            bound = Phase(int(control.state.phase[i])).name
            return Unschedulable(Reason.NO_DECISION, f"the pod is {bound}, not pending")
        if control.state.nodes.n == 0:
            return Unschedulable(Reason.NO_ELIGIBLE_NODE, "the service knows no nodes")
        # Over every eligible node first, as in process; only a choice outside the candidates
        # (nodes kube-scheduler's own filters removed) is made again within them (decide).
        decision = control.decide(i, explain=False, within=within)
        self._memo = (i, changes, within, decision)
        return decision

    def bind(self, key: str, node: str) -> str:
        """Bind the pod to ``node`` (the decision's GPUs when it chose that node); "" or why not."""
        with self.lock:
            table, control = self._need()
            i, n = self.slot.get(key), table.index.get(node)
            if i is None:
                return f"unknown pod {key!r}: the service binds pods it filtered or was sent"
            if n is None:
                return f"node {node!r} is {UNKNOWN_NODE}"
            phase = int(control.state.phase[i])
            if phase == Phase.RUNNING:
                on = table.nodes.names[int(control.state.pod_node[i])]
                return "" if on == node else f"pod {key!r} is already bound to {on!r}"
            if phase != Phase.PENDING:
                return f"pod {key!r} is {Phase(phase).name}, not pending"
            memo = self._memo
            gpus: tuple[int, ...] = ()
            if memo is not None and memo[:2] == (i, len(control.state.changes)):
                decision = memo[3]
                if isinstance(decision, Placement) and decision.node == n:
                    gpus = decision.gpus
            return self._bind(i, n, gpus, check=True, write=True)

    def _bind(self, i: int, n: int, gpus: tuple[int, ...], check: bool, write: bool = False) -> str:
        """Bind slot ``i`` to node ``n``; ``write``: a new bind, recorded by the state source
        (if any) before it is applied here, and in the journal."""
        table, control = self._need()
        view, state = control.views[i], control.state
        if check:
            why = placement_error(state, view, control.eligible(view), Placement(n, gpus))
            if why:
                return f"pod {table.rows_of_pods[i].key!r} cannot go there: {why}"
        gpus = gpus or default_gpus(state, view, n)
        if write and self.source is not None:
            refused = self.source.bind(table.rows_of_pods[i], table.nodes.names[n], gpus)
            if refused:
                return refused
        binding = control.bind(i, Placement(n, gpus))
        assert not isinstance(binding, Unschedulable)
        if write:  # (a rebuild binds again what the journal already holds)
            self._record({"op": "bind", "key": table.rows_of_pods[i].key,
                          "node": table.nodes.names[n], "gpus": list(binding.gpus)})  # fmt: skip
        return ""

    def release(self, key: str) -> bool:
        """The pod ended or was deleted: its resources are free again (in the state source
        too)."""
        with self.lock:
            known = self._release(key)
            if known and self.source is not None:
                self.source.release(key)
            return known

    def _release(self, key: str) -> bool:
        i = self.slot.get(key)
        if i is None or self.control is None:
            return False
        if self.control.state.phase[i] == Phase.RUNNING:
            self.control.state.apply(Release(i))
            self._record({"op": "release", "key": key})
        return True

    def fallbacks(self) -> int:
        return sum(self.control.fallbacks.values()) if self.control is not None else 0

    # -- persistence ---------------------------------------------------------------------------
    def _record(self, entry: dict[str, object]) -> None:
        if self.journal is not None:
            self.journal.append(entry)
            if self.journal.due():
                self.journal.rewrite(self.snapshot())

    def snapshot(self) -> list[dict[str, object]]:
        """Journal entries that rebuild the state: the nodes, the pods that have not ended
        (in their order), the binds of the running ones."""
        if self.table is None or self.control is None:
            return []
        out: list[dict[str, object]] = [
            {"op": "nodes", "rows": [encode(r) for r in self.table.rows]}
        ]
        out += [{"op": "pod", "row": encode(row)} for row in self._live_rows()]
        out += [{"op": "bind", "key": key, "node": node, "gpus": list(gpus)}
                for key, (node, gpus) in self.bindings().items()]  # fmt: skip
        return out

    def _replay(self, journal: Journal) -> None:
        for entry in journal.replay():
            op = entry["op"]
            if op == "nodes":
                self.set_nodes([node_from(r) for r in entry["rows"]])
            elif op == "pod":
                self.pod(pod_from(entry["row"]))
            elif op == "bind":
                table, _ = self._need()
                self._bind(
                    self.slot[entry["key"]],
                    table.index[entry["node"]],
                    tuple(entry["gpus"]),
                    check=False,
                )  # made valid; maybe down now
            elif op == "release":
                self.release(entry["key"])
