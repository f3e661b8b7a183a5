"""``twinsched twin whatif URL``: ask a twin to compare schedulers from its current state.

The request is checked here first (schedulers by the registry, horizon, seeds: one
``error:`` line naming the option), then posted; the job is polled until it is done, with
its progress on stderr. A twin that answers an error, stops answering or takes longer than
the request's time limit is one ``error:`` line (exit 2), never a traceback.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

import typer

from twinsched.cli.console import error_exit, make_console
from twinsched.cli.options import checked_opt, float_opt, parse_seeds, split_list
from twinsched.errors import TwinschedError

POLL_S = 0.05
SEEDS = "seeds 0..4294967295, low-high ranges, at most 20"  # request.py's bounds
SCENARIO_HELP = (
    "Workload from this trace (NAME[:VARIANT]) or stored scenario instead of the twin's "
    "recent arrivals."
)
GRACE_S = 30.0  # beyond the request's time limit, before the command gives up
FIGURES = (
    ("gpu_alloc_pct", "GPU alloc %"),
    ("cpu_alloc_pct", "CPU alloc %"),
    ("queue_wait_s", "wait s"),
    ("completed", "completed"),
    ("pending_at_end", "pending at end"),
    ("energy_kwh", "energy kWh"),
    ("carbon_kg", "carbon kg"),
)


def _horizon(text: str) -> None:
    from twinsched.twin.whatif.request import parse_horizon

    try:
        parse_horizon(text)
    except TwinschedError as exc:
        raise typer.BadParameter(str(exc)) from None


def _seeds(text: str) -> None:
    from twinsched.twin.whatif.request import MAX_SEEDS

    if len(parse_seeds(text)) > MAX_SEEDS:
        raise typer.BadParameter(f"at most {MAX_SEEDS} seeds, got {len(parse_seeds(text))}")


def whatif(
    url: Annotated[str, typer.Argument(help="The twin's base URL, e.g. http://127.0.0.1:8181.")],
    schedulers: Annotated[str, typer.Option(help="Comma-separated scheduler names.")],
    horizon: Annotated[
        str, checked_opt("How far ahead: seconds, or 30m, 2h, 1d. [1m..24h]", _horizon)
    ] = "1h",
    seeds: Annotated[str, checked_opt(f"Seeds of the runs, e.g. 0-4. [{SEEDS}]", _seeds)] = "0",
    scenario: Annotated[str | None, typer.Option(help=SCENARIO_HELP)] = None,
    session: Annotated[
        int | None, typer.Option(help="The twin's session (number) to fork; default the live one.")
    ] = None,
    timeout: Annotated[
        float, float_opt("Time limit of the runs on the twin (s).", 0, 300, open_lo=True)
    ] = 60.0,
    token: Annotated[
        str, typer.Option(envvar="TWINSCHED_TWIN_TOKEN", help="Bearer token of the twin.")
    ] = "",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole result as JSON.")
    ] = False,
) -> None:
    """Compare schedulers from the twin's current state over a horizon, over seeds."""
    body = _body(schedulers, horizon, seeds, scenario, session, timeout)
    try:
        from twinsched.twin.client import TwinClient, TwinClientError

        with TwinClient(url, token or None, timeout=10.0) as twin:
            job = _wait(twin, twin.whatif(body), timeout + GRACE_S)
    except TwinClientError as exc:
        where = "stopped answering" if exc.status == 0 else "refused the what-if"
        raise error_exit(exc, f"the twin at {url} {where}: ") from None
    except TwinschedError as exc:
        raise error_exit(exc) from None
    if job["status"] == "failed":
        raise error_exit(TwinschedError(f"the what-if failed on the twin: {job.get('error')}"))
    if as_json:
        typer.echo(json.dumps(job["result"], indent=2))
    else:
        _table(job["result"])


def _body(
    schedulers: str,
    horizon: str,
    seeds: str,
    scenario: str | None,
    session: int | None,
    timeout: float,
) -> dict[str, Any]:
    from twinsched.twin.whatif.request import check_request, parse_horizon

    try:
        horizon_s = parse_horizon(horizon)
    except TwinschedError as exc:
        raise typer.BadParameter(str(exc), param_hint="--horizon") from None
    names, seed_list = split_list(schedulers), parse_seeds(seeds)
    try:
        check_request(names, horizon_s, seed_list, scenario, session)
    except TwinschedError as exc:
        raise typer.BadParameter(str(exc)) from None
    return {"schedulers": names, "horizon_s": horizon_s, "seeds": seed_list,
            "scenario": scenario, "session": session, "timeout_s": timeout}  # fmt: skip


def _wait(twin: Any, job: dict[str, Any], limit_s: float) -> dict[str, Any]:
    """Poll the job until it is finished; its progress on stderr."""
    console = make_console(stderr=True)
    deadline, shown = time.monotonic() + limit_s, None
    while job["status"] not in ("done", "failed"):
        if time.monotonic() > deadline:
            raise TwinschedError(f"the twin gave no result within {limit_s:g} s")
        progress = (job["progress"]["done"], job["progress"]["total"])
        if progress != shown:
            console.print(f"what-if: {progress[0]}/{progress[1]} runs", highlight=False)
            shown = progress
        time.sleep(POLL_S)
        job = twin.whatif_job(job["job"])
    return job


def _table(result: dict[str, Any]) -> None:
    from rich.table import Table

    fork, work = result["fork"], result["workload"]
    source = (
        f"scenario {work['scenario']}"
        if work["source"] == "scenario"
        else f"recent arrivals, {work['arrivals_per_h']:g}/h"
    )
    title = (
        f"what-if from version {result['version']} (twin time {fork['twin_time']:g} s): "
        f"{fork['nodes']} nodes, {fork['running']} running, {fork['pending']} pending; "
        f"horizon {result['horizon_s']:g} s, {len(result['seeds'])} seeds, {source}"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("scheduler")
    for _, label in FIGURES:
        table.add_column(label, justify="right")
    for row in result["schedulers"]:
        cells = [_cell(row["figures"][key]) for key, _ in FIGURES]
        table.add_row(row["scheduler"], *cells)
    make_console().print(table)
    typer.echo(f"mean ± std [min..max] over seeds; {result['wall_s']:g} s on the twin")


def _cell(s: dict[str, float]) -> str:
    return f"{s['mean']:.4g} ± {s['std']:.2g} [{s['min']:.4g}..{s['max']:.4g}]"
