"""Commands of the scenario store (``app``) and of stored runs (``runs_app``).

Mount them in the main command with ``app.add_typer(store.app, name="scenarios")`` and
``app.add_typer(store.runs_app, name="runs")``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import DbOpt, int_in, int_opt, name_opt, out_dir_opt, out_path_opt
from twinsched.metrics.names import header

app = typer.Typer(
    help="Scenario store: import traces, list, show, export, delete (SQLite or PostgreSQL).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
runs_app = typer.Typer(
    help="Stored runs: list, show, compare.", no_args_is_help=True, pretty_exceptions_enable=False
)


def _options(values: list[str]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"options are KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


# -- scenarios ----------------------------------------------------------------------------------
@app.command("import")
def import_command(
    kind: Annotated[str, typer.Argument(help="Importer name (see 'importers').")],
    path: Annotated[str, typer.Argument(help="File or folder to read (read in place).")],
    name: Annotated[str, name_opt("Scenario name in the store.", "--name")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a stored scenario.")
    ] = False,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="Importer option KEY=VALUE.")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Import a trace or document as one transaction (all or nothing)."""
    from twinsched.store import import_scenario

    with expected_errors():
        infos = import_scenario(
            kind, path, name, db=db, replace=replace, options=_options(option or [])
        )
    for info in infos:
        make_console().print(
            f"stored [bold]{info.name}[/] v{info.version}: {info.n_nodes} nodes, "
            f"{info.n_pods} pods ({kind})",
            highlight=False,
        )
        read = info.meta.get("files_read") or [Path(path).name]  # (those that read PATH alone)
        make_console().print(f"read from {path}: " + ", ".join(map(str, read)),
                             highlight=False, soft_wrap=True)  # fmt: skip
        _print_notes(info.meta)


SHOWN_DROPS = 20  # left-out items printed; meta["dropped"] keeps the list


def _print_notes(meta: dict[str, Any]) -> None:
    """An importer's assumed defaults and what it left out (the decice importer's, as the
    twin's /harmonize reports them)."""
    console = make_console()
    for note in meta.get("notes", []):
        console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    dropped = meta.get("dropped", [])
    for item in dropped[:SHOWN_DROPS]:
        line = f"left out {item['path']}: {item['reason']}"
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    if len(dropped) > SHOWN_DROPS:
        more = len(dropped) - SHOWN_DROPS
        console.print(f"... and {more} more left out (the scenario's meta 'dropped')")


@app.command("importers")
def importers_command() -> None:
    """The importers and their options."""
    from twinsched.store.importers import importers

    table = Table("importer", "what", "options")
    for name, imp in importers().items():
        table.add_row(name, imp.help, ", ".join(imp.options))
    make_console().print(table)


@app.command("list")
def list_command(db: DbOpt = None) -> None:
    """Stored scenarios."""
    from twinsched.store import list_scenarios

    with expected_errors():
        infos = list_scenarios(db)
    columns = ("name", "version", "source", "nodes", "pods", "created", "checksum")
    _print_table(columns, (
        (i.name, str(i.version), i.source, str(i.n_nodes), str(i.n_pods),
         i.created.strftime("%Y-%m-%d %H:%M"), i.checksum[:12])
        for i in infos
    ))  # fmt: skip


def _print_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    table = Table(*columns)
    for row in rows:
        table.add_row(*row)
    make_console().print(table)


@app.command("show")
def show_command(name: str, db: DbOpt = None) -> None:
    """One scenario: provenance, pools, GPU models, labels and workload summary."""
    from twinsched.store import load_scenario, scenario_info

    with expected_errors():
        info = scenario_info(name, db)
        scenario = load_scenario(name, db)
    nodes, pods = scenario.nodes, scenario.pods
    rows: list[tuple[str, Any]] = [
        ("name", info.name),
        ("version", info.version),
        ("source", f"{info.source} {info.source_path}".strip()),
        ("created", info.created.isoformat(timespec="seconds")),
        ("checksum", info.checksum),
        ("nodepools", ", ".join(nodes.pool_names)),
        ("nodes", f"{nodes.n} ({int(nodes.gpu_count.sum())} GPUs)"),
        ("gpu models", ", ".join(nodes.gpu_models) or "-"),
        ("labels", ", ".join(scenario.labels.names) or "-"),
        ("jobs", len(pods.job_names)),
        ("pods", f"{pods.n} ({int((pods.gpu_count > 0).sum())} ask for GPUs)"),
        ("arrivals", f"{float(pods.arrival_s.min(initial=0)):.0f} s .. "
                     f"{float(pods.arrival_s.max(initial=0)):.0f} s"),
        ("meta keys", ", ".join(sorted(info.meta)) or "-"),
    ]  # fmt: skip
    table = Table("field", "value", show_header=False)
    for key, value in rows:
        table.add_row(key, str(value))
    make_console().print(table)


@app.command("export")
def export_command(
    name: str,
    fmt: Annotated[str, typer.Option("--format", help="twin-json or csv.")] = "twin-json",
    out: Annotated[Path | None, out_path_opt("File (twin-json) or folder (csv).", "--out")] = None,
    db: DbOpt = None,
) -> None:
    """Write a stored scenario as a twin JSON document or a folder of CSV tables."""
    from twinsched.store import export_scenario

    target = out or Path(f"{name.replace('/', '_')}{'.json' if fmt == 'twin-json' else ''}")
    with expected_errors():
        written = export_scenario(name, target, fmt, db=db)
    make_console().print(f"wrote {written}")


@app.command("delete")
def delete_command(name: str, db: DbOpt = None) -> None:
    """Remove a scenario (runs that used it keep its name)."""
    from twinsched.store import delete_scenario

    with expected_errors():
        delete_scenario(name, db)
    make_console().print(f"deleted {name}")


# -- runs ---------------------------------------------------------------------------------------
_run_id = int_in(1, 2**63 - 1)
RunId = Annotated[int, typer.Argument(help=f"Run id [1..{2**63 - 1}]", parser=_run_id)]


@runs_app.command("list")
def runs_list(
    limit: Annotated[int, int_opt("How many, latest first.", 1, 100_000, "--limit")] = 50,
    db: DbOpt = None,
) -> None:
    """The latest stored runs."""
    from twinsched.store import list_runs

    with expected_errors():
        runs = list_runs(db, limit=limit)
    columns = ("id", "created", "scenario/trace", "scheduler", "seed", "mode", "status", "wall s")
    _print_table(columns, (
        (str(r.id), r.created.strftime("%Y-%m-%d %H:%M:%S"),
         r.scenario_name or str(r.spec.get("trace", "")),
         r.result.scheduler if r.result else "-", str(r.result.seed) if r.result else "-",
         r.result.mode if r.result else "-", r.status,
         f"{r.wall_seconds:.2f}" if r.wall_seconds is not None else "-")
        for r in runs
    ))  # fmt: skip


@runs_app.command("show")
def runs_show(run_id: RunId, db: DbOpt = None) -> None:
    """One run: its spec, timings, metrics and the number of decisions stored."""
    import json

    from twinsched.store import get_run

    with expected_errors():
        run = get_run(run_id, db)
    table = Table("field", "value", show_header=False)
    table.add_row("id", str(run.id))
    table.add_row("status", run.status)
    table.add_row("scenario", run.scenario_name or "-")
    table.add_row("spec", json.dumps(run.spec, sort_keys=True))
    table.add_row("wall seconds", f"{run.wall_seconds}")
    if run.result is not None:
        for key, value in sorted(run.result.summary.items()):
            table.add_row(key, _fmt(value))
        table.add_row("curve points", str(len(run.result.curve)))
    table.add_row("decisions", str(len(run.decisions)))
    make_console().print(table)


@runs_app.command("compare")
def runs_compare(
    run_ids: Annotated[list[int], typer.Argument(help=f"Run ids [1..{2**63 - 1}]", parser=_run_id)],
    out: Annotated[
        Path | None, out_dir_opt("Also write tables, plots and a report here.", "--out")
    ] = None,
    db: DbOpt = None,
) -> None:
    """Compare runs side by side (allocation at 90/100/130% arrived, or replay metrics)."""
    from twinsched.report.aggregate import comparison_rows
    from twinsched.report.table import print_comparison
    from twinsched.store import get_run

    with expected_errors():
        runs = [get_run(i, db, decisions=False) for i in run_ids]
    results = [r.result for r in runs if r.result is not None]
    table = Table("id", "scheduler", "seed", "mode", *_METRICS)
    for r in runs:
        res = r.result
        if res is None:
            continue
        table.add_row(str(r.id), res.scheduler, str(res.seed), res.mode,
                      *(_fmt(get(res)) for get in _METRICS.values()))  # fmt: skip
    console = make_console()
    console.print(table)
    print_comparison(console, comparison_rows(results), f"runs {', '.join(map(str, run_ids))}")
    if out is not None:
        from twinsched.report.files import write_outputs

        paths = write_outputs(results, out, f"runs {', '.join(map(str, run_ids))}")
        console.print(f"wrote {', '.join(str(p) for p in paths.values())}")


def _at(pct: float) -> Callable[[Any], Any]:
    def get(result: Any) -> Any:
        try:
            return result.at(pct)
        except KeyError:
            return None

    return get


_METRICS: dict[str, Callable[[Any], Any]] = {  # headers: twinsched.metrics.names
    header("alloc_90"): _at(90.0),
    header("alloc_100"): _at(100.0),
    header("alloc_130"): _at(130.0),
    header("wall_seconds"): lambda r: r.wall_seconds,
}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
