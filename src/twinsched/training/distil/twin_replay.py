"""A twin session's whole history replayed as scheduling state, change by change.

The session's opening document (its first snapshot) is read by
:meth:`~twinsched.model.mirror.Mirror.from_document`; then every write of the session, in
version order: a ``PATCH`` body's deltas one by one through the mirror (pods added, pods
finishing or released, nodes failing, returning, cordoned; ``metrics`` deltas change no
scheduling state), and a whole document the session went on with (a ``PUT`` with
``resume``: the live mirror's new or changed nodes) read as a new state. Every change goes
through ``ClusterState.apply``.

What a batch frees goes first (:func:`frees_first`: the twin applies a batch at once). A
binding is what the twin counts as a decision (``twin/core/staging.py``): a ``pod`` delta
that makes the pod ``Running`` on a node it was not running on. The replay numbers them
from 1 in order, as the twin numbers its decisions, brings the pod to the queue, lets the
:class:`Watch` look at the state (the teacher records its values there), then binds it
where the twin says (a live mirror's session: on the node it says, its GPU indices being
made up; ``Mirror.gpus_known``).

Nothing is guessed: where the mirror cannot follow a change (a binding the replayed state
cannot take, a phase change no event makes, a pod or node it does not know), the replay
stops. One disagreement is let through, :data:`HARMLESS`: a pod shown finished on no node
before it was ever placed (a live cluster's pod gone while pending) holds nothing, so the
nodes the teacher sees are still the twin's (the pod stays queued or not arrived; the
teacher's continuations are drawn from the whole workload, not from the queue). Otherwise it
stops with :class:`~twinsched.errors.TwinschedError` naming the session, the version, the
decision and what the state could not take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from twinsched.errors import TwinschedError
from twinsched.model.document import DocumentError, Pod, TwinDocument
from twinsched.model.events import Phase
from twinsched.model.mirror import Disagreement, Mirror

HARMLESS = frozenset({"never_placed"})  # disagreements that leave every node's books alike


@dataclass(frozen=True)
class Step:
    """One write of a session after its opening, by version: a ``PATCH`` body, or (``whole``)
    a whole document the session went on with."""

    version: int
    body: bytes
    whole: bool = False


@dataclass(frozen=True)
class Binding:
    """A decision the change log makes: its number in the session, version, pod, node, GPUs."""

    seq: int
    version: int
    pod: str
    node: str
    gpus: tuple[int, ...]


class Watch(Protocol):
    """What looks at the replayed states: told of every new state and every decision."""

    def start(self, mirror: Mirror) -> None:
        """``mirror`` holds a new state (the opening, pods added, a document replaced)."""

    def binding(self, mirror: Mirror, pod: int) -> None:
        """Pod ``pod`` is in the queue, about to be bound where the twin bound it."""


@dataclass
class Replayed:
    """The state the session's history ends at, and the decisions made on the way."""

    mirror: Mirror
    bindings: list[Binding]


@dataclass(frozen=True)
class _At:
    """Where the replay is: session, version, and the number the next decision gets."""

    session: int
    version: int
    seq: int

    def refused(self, why: str) -> TwinschedError:
        return TwinschedError(
            f"twin session {self.session}, version {self.version} (before decision seq "
            f"{self.seq}): the change cannot be replayed: {why}"
        )


def replay_history(
    session: int,
    opening: TwinDocument,
    steps: Sequence[Step],
    watch: Watch | None = None,
    *,
    gpus_known: bool = True,
) -> Replayed:
    """Replay ``opening`` then ``steps`` (in version order) of twin session ``session``;
    ``gpus_known`` False: its GPU indices are made up (a live mirror's, ``Mirror``)."""
    what = f"twin session {session}: its opening document"
    mirror = _opened(opening, what, session, watch, gpus_known)
    bindings: list[Binding] = []
    for step in steps:
        at = _At(session, step.version, len(bindings) + 1)
        if step.whole:
            document = _read(at, step.body, TwinDocument)
            mirror = _opened(document, _where(at, "its document"), session, watch, gpus_known)
        else:
            mirror = _patch(mirror, _read(at, step.body, _Patch).deltas, at, watch, bindings)
    return Replayed(mirror, bindings)


class _Patch(BaseModel):
    """A stored ``PATCH`` body, as far as the replay reads it (deltas as plain mappings)."""

    deltas: list[dict[str, Any]]


def _read(at: _At, body: bytes | Mapping[str, Any], model: Any) -> Any:
    """``body`` read as ``model``; one stored only in part (cut, not JSON) is refused."""
    try:
        if isinstance(body, bytes):
            return model.model_validate_json(body)
        return model.model_validate(body)
    except ValidationError as exc:
        raise at.refused(f"it is stored only in part ({exc.errors()[0]['msg']})") from None


def _where(at: _At, what: str) -> str:
    return f"twin session {at.session}, version {at.version} (before decision seq {at.seq}): {what}"


def _opened(
    document: TwinDocument, what: str, session: int, watch: Watch | None, gpus_known: bool
) -> Mirror:
    mirror = Mirror.from_document(document, f"twin-session-{session}", gpus_known=gpus_known)
    first = _first_harmful(mirror)
    if first is not None:
        raise TwinschedError(
            f"{what} does not read as a state ({first.kind} {first.subject}: {first.detail})"
        )
    if watch is not None:
        watch.start(mirror)
    return mirror


def _patch(
    mirror: Mirror,
    deltas: Sequence[Mapping[str, Any]],
    at: _At,
    watch: Watch | None,
    bindings: list[Binding],
) -> Mirror:
    """The mirror after one batch's deltas (:func:`frees_first`; pods added together: one
    new state)."""
    added: list[tuple[str, Pod]] = []
    for delta in frees_first(mirror, deltas):
        if delta.get("op") == "pod_add":
            added.append((str(delta["job"]), _read(at, delta["pod"], Pod)))
            continue
        if added:
            mirror, added = _grow(mirror, added, at, watch), []
        if _makes_binding(mirror, delta):
            seq = len(bindings) + 1
            binding = Binding(seq, at.version, str(delta["pod"]), str(delta["node"]),
                              tuple(int(g) for g in delta.get("gpus") or ()))  # fmt: skip
            _bind(mirror, binding, _At(at.session, at.version, seq), watch)
            bindings.append(binding)
        else:
            mirror.apply_deltas([delta])
            _check(mirror, _At(at.session, at.version, len(bindings) + 1))
    return _grow(mirror, added, at, watch) if added else mirror


def frees_first(mirror: Mirror, deltas: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The batch with what frees resources first: the ``pod`` deltas that take a pod the
    state runs out of ``Running`` (each pod's first delta in the batch), and for a pod it
    moves to another node, its going back to the queue; the rest in order.

    The twin applies a batch all at once, so no state between two of its deltas was ever
    the twin's; the decisions in it are taken on the state before it with what it frees
    gone (a live mirror lists pods in any order: one taking the GPU another leaves first)."""
    first: list[Mapping[str, Any]] = []
    rest: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    state = mirror.state
    for delta in deltas:
        pod = str(delta["pod"]) if delta.get("op") == "pod" else None
        i = mirror.pod_index.get(pod) if pod is not None and pod not in seen else None
        if i is not None and int(state.phase[i]) == Phase.RUNNING:
            if delta.get("phase") != "Running":
                first.append(delta)
                continue
            if mirror.node_names[int(state.pod_node[i])] != delta.get("node"):  # moved
                first.append({"op": "pod", "pod": pod, "phase": "Pending"})
        rest.append(delta)
        if pod is not None:
            seen.add(pod)
    return first + rest


def _makes_binding(mirror: Mirror, delta: Mapping[str, Any]) -> bool:
    """Is ``delta`` a decision, as the twin counts them: a known pod made Running on a node
    it is not running on?"""
    if delta.get("op") != "pod" or delta.get("phase") != "Running" or delta.get("node") is None:
        return False
    i = mirror.pod_index.get(str(delta["pod"]))
    if i is None:
        return False  # the mirror counts it (unknown_pod): refused by _check
    state = mirror.state
    if int(state.phase[i]) != Phase.RUNNING:
        return True
    return bool(mirror.node_names[int(state.pod_node[i])] != delta["node"])


def _bind(mirror: Mirror, d: Binding, at: _At, watch: Watch | None) -> None:
    """Bring the pod to the queue (it arrives, or leaves the node it ran on), let ``watch``
    see the state, then bind it where the twin did."""
    before = mirror.disagreements.total()
    mirror.pod_change(d.pod, "Pending", None, ())
    if mirror.disagreements.total() > before:
        why = mirror.disagreements.recent[-1].detail
        raise _misfit(at, d, f"the pod cannot go back to the queue ({why})")
    i, n = mirror.pod_index[d.pod], mirror.node_index.get(d.node)
    if n is None:
        raise _misfit(at, d, "the node is not in the replayed state")
    if watch is not None:
        watch.binding(mirror, i)
    mirror.pod_change(d.pod, "Running", d.node, d.gpus)
    if _first_harmful(mirror) is not None:
        raise _misfit(at, d, mirror.disagreements.recent[-1].detail)


def _misfit(at: _At, d: Binding, why: str) -> TwinschedError:
    return TwinschedError(
        f"twin session {at.session}, seq {d.seq}: pod {d.pod} on node {d.node} does not fit "
        f"the replayed state (version {at.version}): {why}"
    )


def _grow(mirror: Mirror, added: list[tuple[str, Pod]], at: _At, watch: Watch | None) -> Mirror:
    """The mirror with the pods the batch added (a new state: ``watch`` starts again)."""
    try:
        grown = mirror.grow(added)
    except DocumentError as exc:
        raise at.refused(f"pods added cannot be read ({exc})") from None
    _check(grown, at)
    if watch is not None:
        watch.start(grown)
    return grown


def _first_harmful(mirror: Mirror) -> Disagreement | None:
    """The first disagreement counted that is not :data:`HARMLESS` (None: there is none).
    Checked after every change, so it is among the last ones kept with their reasons."""
    kinds = [kind for kind, n in mirror.disagreements.counts.items() if n and kind not in HARMLESS]
    if not kinds:
        return None
    lost = Disagreement(kinds[0], "?", "its reason was not kept")  # past the last ones kept
    return next((d for d in mirror.disagreements.recent if d.kind not in HARMLESS), lost)


def _check(mirror: Mirror, at: _At) -> None:
    """Refuse once the mirror could not follow a change."""
    d = _first_harmful(mirror)
    if d is not None:
        raise at.refused(f"{d.kind} {d.subject}: {d.detail}")
