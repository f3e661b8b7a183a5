"""The service's cluster: node table, pods it was told about, bindings, and the controller.

Every call goes through :class:`~twinsched.scheduling.controller.SchedulerController`:
``filter`` reads its eligible-node mask, ``prioritize`` its decision (validated, with the
fallback), ``bind`` its Bind step. A decision is kept until the state changes, so the
filter, prioritize and bind calls of one pod's cycle cost one decision. Durable changes
(nodes, pods bound or posted, binds, releases) are written to the
:class:`~twinsched.serve.journal.Journal` (if any) and replayed at start; what a filter or
prioritize call brings (its pod, its node objects) is never durable (``serve/tentative.py``).
Running pods are never unbound by a node update (``serve/holding.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence

from twinsched.errors import TwinschedError
from twinsched.model.cluster import BoolA, Pods, single_pool_scenario
from twinsched.model.events import Arrive, NodeDown, Phase, Reject, Release
from twinsched.scheduling import registry
from twinsched.scheduling.controller import SchedulerController, arrival_order
from twinsched.scheduling.framework import (
    DEFAULT_FALLBACK,
    Decision,
    Placement,
    Reason,
    Unschedulable,
)
from twinsched.serve import invariants, persist, recent, sync
from twinsched.serve.candidates import CandidateCache
from twinsched.serve.convert import NodeRow, NodesError, ObjectError, PodRow
from twinsched.serve.holding import Bound, effective_rows, merged, usage
from twinsched.serve.journal import Journal, encode
from twinsched.serve.ranking import Priorities, priorities
from twinsched.serve.source import StateSource
from twinsched.serve.table import LabelsFull, Table
from twinsched.serve.tentative import Tentative
from twinsched.serve.verdict import UNKNOWN_NODE, Verdict, unique_names
from twinsched.sim.runs import start

_LIVE = (Phase.PENDING, Phase.RUNNING)
FORGOTTEN = "forgotten: seen only in filter calls"


class ServiceCluster:
    """What the service knows, changed under one lock (calls may come concurrently).

    ``validate``: check :mod:`~twinsched.serve.invariants` after every change (tests)."""

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
        validate: bool = False,
        tentative: Tentative | None = None,
    ) -> None:
        for name in (scheduler, fallback):  # a name that cannot be made fails now, not at
            if name is not None:  # the first pod (the service would start and answer errors)
                registry.check(name)
        self.scheduler_name, self.seed, self.workload = scheduler, seed, workload
        self.fallback, self.capacity, self.validate = fallback, capacity, validate
        self.lock = threading.RLock()
        self.table: Table | None = None
        self.control: SchedulerController | None = None
        self.slot: dict[str, int] = {}
        self._memo: tuple[int, int, BoolA | None, Decision] | None = None
        self._cands = CandidateCache({}, 0)
        self.declared: list[NodeRow] = []  # the nodes as last given (POST /nodes, the twin)
        self.overcommitted: dict[str, str] = {}  # node -> what its running pods exceed
        self.missing: dict[str, str] = {}  # node not declared, holding running pods
        self.tentative = tentative if tentative is not None else Tentative()
        self.recent = recent.RecentDecisions()  # what GET /explain explains (serve/explanations)
        self.journal, self.source = None, None
        if journal is not None:
            persist.replay(self, journal)
            journal.rewrite(persist.snapshot(self))  # compacted at every start
        self.journal = journal
        self.source = source
        sync.refresh(self, force=True)

    # -- nodes ---------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.table is not None

    def set_nodes(self, rows: Sequence[NodeRow], at: str = "items", *, merge: bool = False) -> bool:
        """Use these nodes; running pods stay where they run (``serve/holding.py``). A no-op
        (False) when nothing changes. Nodes the held pods' labels do not fit with, or a
        name given twice, raise :class:`ObjectError` on ``at`` and change nothing.
        ``merge``: add or update these nodes, keep the others, journal nothing (the node
        objects of calls, with ``--nodes-from-calls``: sent again with every call)."""
        rows = list(rows)
        unique_names(rows, at)
        with self.lock:
            old = self.declared
            rows = merged(old, rows) if merge else rows
            if (
                self.table is not None
                and len(rows) == len(old)
                and all(a is b or a == b for a, b in zip(rows, old, strict=True))
            ):
                return False
            try:
                self.rebuild(rows)
            except NodesError as exc:  # the node list itself (e.g. too many GPU models)
                raise ObjectError(at, exc.problem) from None
            except ObjectError as exc:
                why = f"the pods the service holds do not fit: {exc.problem}"
                raise ObjectError(at, why) from None
            except TwinschedError as exc:  # (e.g. a model table that cannot hold the nodes)
                raise ObjectError(at, str(exc)) from None
            if not merge:
                self._record({"op": "nodes", "rows": [encode(r) for r in rows]})
            self.changed()
            return True

    def rebuild(self, rows: list[NodeRow], extra: Bound | None = None, keep: bool = True) -> None:
        """A new table and controller over ``rows``, with the live pods (``keep``: the
        tentative ones too) and their bindings, and ``extra`` bindings of pending pods; all
        or nothing (the pods may need more labels than a table holds: ObjectError)."""
        old = (self.table, self.control, self.slot, self._memo, self._cands, self.declared,
               self.overcommitted, self.missing)  # fmt: skip
        try:
            self._build(rows, extra or {}, keep)
        except TwinschedError:
            (self.table, self.control, self.slot, self._memo, self._cands, self.declared,
             self.overcommitted, self.missing) = old  # fmt: skip
            raise

    def _build(self, declared: list[NodeRow], extra: Bound, keep: bool) -> None:
        bound = {**self.bindings(), **extra}
        live = self.live_rows(keep)  # pods that ended or were forgotten are left out
        previous = {r.name: r for r in self.table.rows} if self.table is not None else {}
        eff = effective_rows(declared, usage(bound, {r.key: r for r in live}), previous)
        table = Table(eff.rows, live, max(self.capacity, 2 * len(live)))
        pods = table.pods
        scenario = single_pool_scenario("scheduler-service", table.nodes, pods, {}, table.vocab)
        workload = self.workload if self.workload is not None else pods
        self.control = start(
            scenario, pods, self.scheduler_name, self.seed, workload=workload,
            fallback=self.fallback, queue_sort=arrival_order,
        )  # fmt: skip
        self.table, self.slot, self._memo = table, {}, None
        self.declared, self.overcommitted, self.missing = declared, eff.overcommitted, eff.missing
        self._cands = CandidateCache(table.index, table.nodes.n)
        for row in live:
            self._enter(row)
        for key, (node, gpus) in bound.items():  # held where they run, whatever the node says
            self._bind(self.slot[key], table.index[node], gpus, check=False)
        for n, node_row in enumerate(eff.rows):  # after the binds: a pod stays on a node gone down
            if not node_row.ready:  # NotReady, cordoned, over-committed or missing: no new pods
                self.control.state.apply(NodeDown(n))

    def live_rows(self, keep: bool = True) -> list[PodRow]:
        """The pods pending or running, in the order they came (``keep``: tentative too)."""
        if self.table is None or self.control is None:
            return []
        phase, rows = self.control.state.phase, self.table.rows_of_pods
        return [
            rows[i]
            for key, i in self.slot.items()
            if phase[i] in _LIVE and (keep or key not in self.tentative)
        ]

    def bindings(self) -> Bound:
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

    def changed(self) -> None:
        """After a change: the invariants, when validating."""
        if self.validate:
            invariants.check(self)

    # -- pods ----------------------------------------------------------------------------------
    def pod(self, row: PodRow, durable: bool = True) -> int:
        """The pod's slot, added (pending) if new; ``durable=False``: seen only in a filter
        or prioritize call (tentative: never journalled, forgotten after a while)."""
        with self.lock:
            i = self.slot.get(row.key)
            if i is None:
                i = self._add(row)
                if not durable:
                    self.tentative.touch(row.key)
                    return i
                self._record({"op": "pod", "row": encode(row)})
            elif not durable:
                if row.key in self.tentative:
                    self.tentative.touch(row.key)
                return i
            elif self.tentative.settle(row.key):
                self._record({"op": "pod", "row": encode(self.need()[0].rows_of_pods[i])})
            self.changed()
            return i

    def _add(self, row: PodRow) -> int:
        """``_enter``, rebuilding first when the pod table is full, and once more without
        the tentative pods when the label table has no room for the pod (their labels are
        not kept: the table is rebuilt, not poisoned); still no room: LabelsFull (a 400)."""
        table = self.need()[0]
        if table.full:
            self.rebuild(self.declared)
        try:
            return self._enter(row)
        except LabelsFull:
            if not len(self.tentative):
                raise
            self._forget(self.tentative.clear())
            self.rebuild(self.declared, keep=False)
            return self._enter(row)

    def _enter(self, row: PodRow) -> int:
        table, control = self.need()
        view = table.add(row)
        control.views[view.index] = view
        control.state.apply(Arrive(view.index))
        self.slot[row.key] = view.index
        return view.index

    def _forget(self, keys: list[str]) -> None:
        """Drop these pods if pending (they leave at the next rebuild)."""
        if self.control is None:
            return
        state = self.control.state
        for key in keys:
            i = self.slot.pop(key, None)
            if i is not None and state.phase[i] == Phase.PENDING:
                state.apply(Reject(i, FORGOTTEN))

    def expire(self) -> None:
        """Forget tentative pods past their time or beyond the bound."""
        if len(self.tentative):
            self._forget(self.tentative.expired())

    def need(self) -> tuple[Table, SchedulerController]:
        if self.table is None or self.control is None:
            raise TwinschedError("no nodes known yet: start with --nodes FILE or POST /nodes")
        return self.table, self.control

    # -- the extender verbs --------------------------------------------------------------------
    def filter(self, row: PodRow, candidates: list[str]) -> Verdict:
        with self.lock:
            sync.refresh(self)
            self.expire()
            i = self.pod(row, durable=False)
            control = self.need()[1]
            view = control.views[i]
            mask = control.eligible(view)
            hit = self._cands.get(candidates)
            known, ok = hit.nodes, mask[hit.nodes]
            names = self.need()[0].names
            passing = known[ok]
            verdict = Verdict(names[passing].tolist(), dict.fromkeys(hit.unknown, UNKNOWN_NODE))
            self._cands.keep(verdict.passing, passing)  # the prioritize call's list
            failed_idx = known[~ok]
            failed_names = names[failed_idx].tolist()
            if failed_names:
                verdict.explain(control, view, failed_names, failed_idx)
            return verdict

    def prioritize(self, row: PodRow, candidates: list[str], ranking: bool = True) -> Priorities:
        """The candidates' priorities (``serve/ranking.py``); [] when none is chosen."""
        with self.lock:
            self.expire()
            i = self.pod(row, durable=False)
            decision = self.decide(i, candidates)
            if not isinstance(decision, Placement):
                return []
            table, control = self.need()
            among = self._cands.get(candidates).nodes if ranking else None
            return priorities(control, i, decision.node, among, table.nodes.names)

    def decide(self, i: int, candidates: list[str] | None = None) -> Decision:
        """The controller's decision for slot ``i`` (kept until the state changes)."""
        control = self.need()[1]
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
        # Every eligible node first (as in process); a choice outside the candidates: again within.
        self.recent.add(control.state, i)
        decision = control.decide(i, explain=False, within=within)
        self._memo = (i, changes, within, decision)
        return decision

    def bind(self, key: str, node: str) -> str:
        """Bind the pod to ``node`` (the decision's GPUs when it chose that node); "" or why not."""
        with self.lock:
            table, control = self.need()
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
        (if any) before it is applied here, and in the journal (its pod too if tentative)."""
        table, control = self.need()
        if check:
            why = control.validate(i, Placement(n, gpus))
            if why:
                return f"pod {table.rows_of_pods[i].key!r} cannot go there: {why}"
        gpus = gpus or control.gpus_for(i, n)
        row = table.rows_of_pods[i]
        if write and self.source is not None:
            refused = self.source.bind(row, table.nodes.names[n], gpus, control.decided_by(i))
            if refused:
                return refused
        binding = control.bind(i, Placement(n, gpus))
        assert not isinstance(binding, Unschedulable)
        if write:  # (a rebuild binds again what the journal already holds)
            if self.tentative.settle(row.key):
                self._record({"op": "pod", "row": encode(row)})
            self._record({"op": "bind", "key": row.key, "node": table.nodes.names[n],
                          "gpus": list(binding.gpus)})  # fmt: skip
        return ""

    def release(self, key: str) -> bool:
        """The pod ended or was deleted: its resources are free again (in the state source
        too); a pending pod is forgotten."""
        with self.lock:
            known = self.release_held(key)
            if known and self.source is not None:
                self.source.release(key)
            self.changed()
            return known

    def release_held(self, key: str) -> bool:
        """``release`` without telling the state source (it told us)."""
        i = self.slot.get(key)
        if i is None or self.table is None or self.control is None:
            return False
        state = self.control.state
        if state.phase[i] == Phase.PENDING:
            self.tentative.settle(key)
            self._forget([key])
        elif state.phase[i] == Phase.RUNNING:
            node = self.table.nodes.names[int(state.pod_node[i])]
            state.apply(Release(i))
            if node in self.overcommitted or node in self.missing:
                self._unhold()
        else:
            return True
        self._record({"op": "release", "key": key})
        return True

    def _unhold(self) -> None:
        """A pod left an over-committed or missing node: rebuild (kept as is if impossible)."""
        with contextlib.suppress(TwinschedError):
            self.rebuild(self.declared)

    def hold(self, i: int, n: int, gpus: tuple[int, ...]) -> None:
        """Bind slot ``i`` to node ``n`` unchecked (someone else's word; not journalled)."""
        self._bind(i, n, gpus, check=False)

    def fallbacks(self) -> int:
        return sum(self.control.fallbacks.values()) if self.control is not None else 0

    def _record(self, entry: dict[str, object]) -> None:
        if self.journal is not None:
            self.journal.append(entry)
            if self.journal.due():
                self.journal.rewrite(persist.snapshot(self))
