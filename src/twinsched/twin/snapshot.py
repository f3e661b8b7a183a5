"""A twin's state as a stored scenario: nodes, pods with their arrival times, a metrics window.

:func:`read_twin` reads ``GET /state`` and, per metric, ``GET /history`` over the window that
ends at the document's time (the session, when one is named, rides on every request as the
``session`` query parameter); :func:`to_scenario` turns that into a :class:`Scenario`
(pure); :func:`store_snapshot` saves it as the next version of its name, in one transaction.
``twinsched twin snapshot`` (``cli/twin_snapshot.py``) repeats this with ``--every``.

Times: a replay starts at 0, so the scenario's clock starts at ``time_zero_s``, the earlier
of the first arrival and the window's start (0 for a twin fed by a simulated run, whose
times already start at 0; the epoch of the first pod for a mirrored cluster). Arrivals and
the window's sample times are in seconds after it; ``meta["snapshot"]`` keeps it, with the
twin's URL, session, version and time, the pod phases, the running pods' nodes and the nodes
down or cordoned (a scenario has no initial placement: a replay schedules every pod again).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.convert import document_to_scenario
from twinsched.model.document import TwinDocument
from twinsched.twin.client import TwinClient, TwinClientError

if TYPE_CHECKING:
    from twinsched.store import ScenarioInfo

SOURCE = "twin-snapshot"
HISTORY_LIMIT = 1_000_000  # rows of one metric's window (the route's most)


@dataclass(frozen=True)
class SnapshotSpec:
    """What to read from which twin, and where to store it."""

    url: str
    scenario: str
    session: int | None = None  # the twin's session number (GET /sessions); None: the live one
    window_s: float = 3600.0
    step_s: float | None = 60.0  # None: raw samples
    metrics: tuple[str, ...] = ()  # empty: every metric the document's nodes carry


@dataclass(frozen=True)
class TwinRead:
    """One read of the twin: its version (ETag), document and metric windows."""

    version: str  # the ETag as answered (quoted), to ask "changed since?" with
    document: TwinDocument
    series: list[dict[str, Any]] = field(default_factory=list)  # {node, metric, times, values}
    truncated: bool = False
    history: bool = True  # False: the twin keeps no history


class SnapshotError(TwinschedError):
    """The twin could not be read (unreachable, an unknown session, an error answer)."""


def client_for(spec: SnapshotSpec, timeout: float = 60.0) -> TwinClient:
    """A client of the twin that sends the session with every request."""
    params = {"session": str(spec.session)} if spec.session is not None else None
    return TwinClient(spec.url, timeout=timeout, params=params)


def read_twin(client: TwinClient, spec: SnapshotSpec, since: str = "") -> TwinRead | None:
    """The twin's state and metric windows; None while its version is still ``since``."""
    try:
        got = client.get_state_if_changed(since)
        if got is None:
            return None
        version, document = got
        return _with_history(client, spec, TwinRead(version, document))
    except TwinClientError as exc:
        raise SnapshotError(_explain(spec, exc)) from None


def _with_history(client: TwinClient, spec: SnapshotSpec, read: TwinRead) -> TwinRead:
    end = read.document.timestamp
    start = max(0.0, end - spec.window_s)
    series, truncated = [], False
    for metric in spec.metrics or _metric_names(read.document):
        try:
            answer = client.history(
                metric, start=start, end=end, step=spec.step_s, limit=HISTORY_LIMIT
            )
        except TwinClientError as exc:
            if exc.status == 422 and "no history" in exc.detail:
                return replace(read, history=False)
            raise
        truncated = truncated or bool(answer.get("truncated"))
        series += [{"node": s["node"], "metric": metric, "times": s["times"],
                    "values": s["values"]} for s in answer.get("series", [])]  # fmt: skip
    return replace(read, series=series, truncated=truncated)


def _metric_names(document: TwinDocument) -> list[str]:
    return sorted({m for pool in document.nodepools for n in pool.nodes for m in n.metrics})


def _explain(spec: SnapshotSpec, exc: TwinClientError) -> str:
    if spec.session is not None and exc.status in (404, 422) and "session" in exc.detail:
        return (
            f"the twin at {spec.url} refused session {spec.session} ({exc.status}: "
            f"{exc.detail}); without --session the snapshot takes the twin's live state"
        )
    if exc.status == 0:
        return f"the twin at {spec.url} cannot be reached: {exc.detail}"
    return f"the twin at {spec.url} answered {exc.status}: {exc.detail}"


def to_scenario(read: TwinRead, spec: SnapshotSpec, taken_at: datetime) -> Scenario:
    """The scenario of one read (pure): the document's nodes, links and pods, on the
    scenario's clock (module doc), with the snapshot's provenance and window in ``meta``."""
    doc = read.document
    scenario = document_to_scenario(doc, spec.scenario)
    start = max(0.0, doc.timestamp - spec.window_s)
    zero = min(float(scenario.pods.arrival_s.min(initial=start)), start)
    pods = replace(scenario.pods, arrival_s=scenario.pods.arrival_s - zero)
    meta = {
        **scenario.meta,
        "source": SOURCE,
        "snapshot": _provenance(read, spec, taken_at, zero),
        "metrics": {
            "start_s": start - zero,
            "end_s": doc.timestamp - zero,
            "step_s": spec.step_s,
            "agg": "mean" if spec.step_s is not None else "raw",
            "truncated": read.truncated,
            "history": read.history,
            "series": [{**s, "times": [t - zero for t in s["times"]]} for s in read.series],
        },
    }
    return replace(scenario, pods=pods, meta=meta)


def _provenance(
    read: TwinRead, spec: SnapshotSpec, taken_at: datetime, zero: float
) -> dict[str, Any]:
    doc = read.document
    nodes = [n for pool in doc.nodepools for n in pool.nodes]
    pods = [p for job in doc.jobs for p in job.pods]
    return {
        "twin": spec.url,
        "session": spec.session,
        "twin_version": read.version.strip('"'),
        "twin_time_s": doc.timestamp,
        "time_zero_s": zero,
        "taken_at": taken_at.isoformat(timespec="seconds"),
        "phases": dict(sorted(Counter(p.phase for p in pods).items())),
        "running": {p.id: p.node for p in pods if p.phase == "Running"},
        "down": [n.id for n in nodes if n.status == "NotReady"],
        "cordoned": [n.id for n in nodes if n.unschedulable],
    }


def now() -> datetime:
    """The wall-clock time a snapshot is taken (UTC)."""
    return datetime.now(UTC)


def store_snapshot(
    scenario: Scenario, spec: SnapshotSpec, db: str | None, *, replace_other: bool = False
) -> ScenarioInfo:
    """Save ``scenario`` as the next version of its name (one transaction). A stored scenario
    of that name from another source is kept unless ``replace_other``."""
    from twinsched.store import ScenarioNotFoundError, save_scenarios, scenario_info

    try:
        old: ScenarioInfo | None = scenario_info(spec.scenario, db)
    except ScenarioNotFoundError:
        old = None
    if old is not None and old.source != SOURCE and not replace_other:
        raise SnapshotError(
            f"scenario '{spec.scenario}' is stored already from {old.source} (version "
            f"{old.version}), not from a twin snapshot; choose another --scenario, or "
            "--replace to make the snapshot its next version"
        )
    where = spec.url if spec.session is None else f"{spec.url} session={spec.session}"
    (info,) = save_scenarios([scenario], source=SOURCE, source_path=where, db=db, replace=True)
    return info
