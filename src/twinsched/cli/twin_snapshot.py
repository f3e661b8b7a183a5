"""``twinsched twin snapshot URL --scenario NAME [--every 10m]``: a twin's state into the store.

Mounted on the ``twin`` group by ``cli/twin.py``. Each snapshot is the next version of the
scenario (``twin/snapshot.py`` builds it); ``--every`` repeats until Ctrl-C (or SIGTERM, or
``--count``), one progress line per snapshot. A snapshot is one transaction: stopped midway,
it leaves the version before it.
"""

from __future__ import annotations

import re
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from twinsched.cli.console import error_exit
from twinsched.cli.options import DbOpt, int_opt, name_opt, split_list
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.twin.client import TwinClient
    from twinsched.twin.snapshot import SnapshotSpec

_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
DAY, WEEK, YEAR = 86400.0, 7 * 86400.0, 365 * 86400.0


def seconds(text: str) -> float:
    """``'90'``, ``'90s'``, ``'10m'``, ``'1h30m'``, ``'2d'`` as seconds."""
    text = str(text).strip().lower()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"a duration looks like 90, 30s, 10m, 1h30m or 2d, got {text!r}")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _show(s: float) -> str:
    for unit in "dhm":
        if s >= _UNITS[unit] and s % _UNITS[unit] == 0:
            return f"{s / _UNITS[unit]:g}{unit}"
    return f"{s:g}s"


def duration_opt(help: str, lo: float, hi: float, *decls: str) -> Any:
    """``typer.Option`` of a duration in ``lo..hi`` seconds (range appended to the help)."""
    span = f"{_show(lo) if lo else 0}..{_show(hi)}"

    def parse(value: Any) -> float:
        try:
            s = seconds(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        if not lo <= s <= hi:
            raise typer.BadParameter(f"{value} is outside the accepted range {span}")
        return s

    return typer.Option(*decls, help=f"{help} [{span}]", parser=parse, metavar="DURATION")


def snapshot(
    url: Annotated[str, typer.Argument(help="The twin's base URL, e.g. http://127.0.0.1:8181.")],
    scenario: Annotated[
        str, name_opt("Scenario name; each snapshot is its next version.", "--scenario")
    ],
    every: Annotated[
        float | None, duration_opt("Repeat at this interval until Ctrl-C.", 1, WEEK, "--every")
    ] = None,
    count: Annotated[
        int | None, int_opt("With --every: stop after this many snapshots.", 1, 10**6, "--count")
    ] = None,
    session: Annotated[
        int | None,
        int_opt(
            "The twin's session to read (sent as ?session=N; default: the live one).",
            1,
            2**63 - 1,
            "--session",
        ),
    ] = None,
    window: Annotated[
        float, duration_opt("Metrics window, ending at the twin's time.", 0, YEAR, "--window")
    ] = 3600.0,
    step: Annotated[
        float, duration_opt("Mean over buckets of this width; 0: raw samples.", 0, DAY, "--step")
    ] = 60.0,
    metrics: Annotated[
        str, typer.Option(help="Comma-separated metrics (default: those the nodes carry).")
    ] = "",
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Replace a scenario stored from another source (as its next version)."
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Store the twin's nodes, pods (with arrival times) and a metrics window as a scenario
    that run, train and sweep read (--scenario NAME); docs/twin.md, "Snapshots"."""
    if count is not None and every is None:
        raise typer.BadParameter("--count needs --every", param_hint="--count")
    try:
        from twinsched.cli.options import check_store
        from twinsched.twin.snapshot import SnapshotSpec, client_for

        check_store(db)  # a store that cannot be opened fails before the twin is read
        spec = SnapshotSpec(
            url, scenario, session, window, step or None, tuple(split_list(metrics))
        )
        client = client_for(spec)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    try:
        _loop(client, spec, db, every, count, replace)
    finally:
        client.close()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _loop(
    client: TwinClient,
    spec: SnapshotSpec,
    db: str | None,
    every: float | None,
    count: int | None,
    replace: bool,
) -> None:
    """Snapshots until done; Ctrl-C or SIGTERM ends it between two (or rolls back the one
    being stored) with a last line saying how many were stored."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    taken, stored, last = 0, [], ""
    try:
        while True:
            taken += 1
            try:
                last, info, said = _once(client, spec, db, last, replace, taken)
            except TwinschedError as exc:
                if every is None or taken == 1:  # a bad start ends the command
                    raise error_exit(exc) from exc
                info, said = None, f"snapshot {taken} failed: {exc}; next try in {_show(every)}"
            if info is not None:
                stored.append(info)  # counted before it is said: a signal after the line
            typer.echo(said)  # finds it in the last line's count
            if every is None or (count is not None and taken >= count):
                break
            time.sleep(every)
    except KeyboardInterrupt:
        typer.echo(f"stopped after {taken} snapshots: {_versions(spec.scenario, stored)}")
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
    if every is not None:
        typer.echo(f"done: {_versions(spec.scenario, stored)}")
    elif not stored:
        raise typer.Exit(1)  # one snapshot asked for, none stored (a twin without nodes)


def _versions(name: str, stored: list[Any]) -> str:
    if not stored:
        return "no version stored"
    return f"{len(stored)} stored, {name} v{stored[0].version}..v{stored[-1].version}"


def _once(
    client: TwinClient, spec: SnapshotSpec, db: str | None, since: str, replace: bool, k: int
) -> tuple[str, Any, str]:
    """One snapshot: (the twin version read, the stored ScenarioInfo or None if unchanged,
    the line that says what happened)."""
    from twinsched.twin.snapshot import now, read_twin, store_snapshot, to_scenario

    at = now()
    read = read_twin(client, spec, since)
    clock = at.strftime("%H:%M:%SZ")
    if read is None:
        version = since.strip('"')
        said = f"snapshot {k} at {clock}: twin version {version} unchanged; nothing stored"
        return since, None, said
    if not any(pool.nodes for pool in read.document.nodepools):
        version = read.version.strip('"')
        said = f"snapshot {k} at {clock}: twin version {version} holds no node yet; nothing stored"
        return "", None, said  # read it again next time
    info = store_snapshot(to_scenario(read, spec, at), spec, db, replace_other=replace)
    phases = read_phases(info.meta)
    samples = sum(len(s["times"]) for s in read.series)
    history = (
        f"{samples} samples in {len(read.series)} series"
        + (" (truncated)" if read.truncated else "")
        if read.history
        else "the twin keeps no history"
    )
    said = (
        f"snapshot {k} at {clock}: stored {info.name} v{info.version}: {info.n_nodes} nodes, "
        f"{info.n_pods} pods ({phases}); twin version {info.meta['snapshot']['twin_version']} at "
        f"t={_time(read.document.timestamp)} s; metrics: {history}"
    )
    return read.version, info, said


def _time(t: float) -> str:
    """Seconds without exponent (epoch times stay readable)."""
    return str(int(t)) if t == int(t) else f"{t:.3f}"


def read_phases(meta: dict[str, Any]) -> str:
    """``Pending 3, Running 30`` from a snapshot's meta."""
    phases = meta.get("snapshot", {}).get("phases", {})
    return ", ".join(f"{k} {v}" for k, v in phases.items()) or "no pods"
