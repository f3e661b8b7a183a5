"""``twinsched distil``: a reranker learned from a look-ahead's rollout values; register it.

What to distil is a recipe file (``--recipe``, :mod:`twinsched.training.recipe_file`; without
one, the shipped ``openb-rerank`` model's recipe); the options say where the data, the
results and the model go and what runs the teacher.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import expected_errors, make_console, progress_bar
from twinsched.cli.executor import AddressOpt, CpusOpt, ExecutorName, ExecutorOpt, ray_executor
from twinsched.cli.options import (
    DataOpt,
    DbOpt,
    ModelsDirOpt,
    checked_opt,
    int_opt,
    load_source,
    out_dir_opt,
    parse_seeds,
    source_data,
)
from twinsched.cli.recipes import PrintRecipeOpt, RecipeOpt, RegisterOpt
from twinsched.training.recipe_file import WORKERS_MOST

if TYPE_CHECKING:
    from twinsched.training.distil.from_runs import StoredRun
    from twinsched.training.distil.from_twin import TwinSession


MarginsOpt = Annotated[
    Path | None,
    typer.Option(
        help="Fit on margins recorded before (an earlier run's margins.npz) "
        "instead of running the teacher.",
        exists=True,
        dir_okay=False,
    ),
]

FromRunsOpt = Annotated[
    str | None,
    checked_opt(
        "Also learn from these stored runs, e.g. 12-20: the teacher's values at the "
        "states they visited (DAgger; fill-up runs of the recipe's trace stored with "
        "`twinsched run --record --decisions`) [run ids: integers and low-high ranges, "
        "at most 10000]",
        parse_seeds,
    ),
]

FromTwinOpt = Annotated[
    str | None,
    checked_opt(
        "Also learn from these twin sessions, e.g. 3,5: the teacher's values at the "
        "states their stored bindings led to (DAgger; sessions that opened with a "
        "document and kept all their decisions) [session ids: integers and low-high "
        "ranges, at most 10000]",
        parse_seeds,
    ),
]

TwinDbOpt = Annotated[
    str | None,
    typer.Option(
        help="The twin's history database of --from-twin-session (default: "
        "$TWINSCHED_TWIN_DB, else the store's, as the twin resolves it)."
    ),
]


def distil_command(
    recipe_file: RecipeOpt = None,
    print_recipe: PrintRecipeOpt = False,
    workers: Annotated[int, int_opt("Local processes (0: one per core).", 0, WORKERS_MOST)] = 0,
    executor: ExecutorOpt = ExecutorName.local,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    out: Annotated[Path, out_dir_opt("The reranker's policy.npz and spec.")] = Path("out/distil"),
    register: RegisterOpt = None,
    margins: MarginsOpt = None,
    models_dir: ModelsDirOpt = None,
    data: DataOpt = None,
    from_runs: FromRunsOpt = None,
    from_sweep: Annotated[
        str | None, typer.Option(help="Also learn from every stored run of this sweep.")
    ] = None,
    db: DbOpt = None,
    from_twin_session: FromTwinOpt = None,
    twin_db: TwinDbOpt = None,
) -> None:
    """Distil a look-ahead into a fast reranker of FGD's best candidates; optionally register."""
    from twinsched.training.distil.margins import Margins, teacher_shortlist
    from twinsched.training.distil.run import distil
    from twinsched.training.distil.run import register as register_model
    from twinsched.training.recipe_file import distil_spec, distil_toml

    console = make_console()
    with expected_errors():
        spec = distil_spec(recipe_file)
    if print_recipe:
        typer.echo(distil_toml(spec), nl=False)
        return
    with expected_errors():
        spec = replace(spec, data=source_data(spec.trace, data, None))
        teacher_shortlist(spec.teacher)  # a teacher that is not a look-ahead fails here
        recorded = Margins.load(margins) if margins is not None else None
        runs = _stored_runs(from_runs, from_sweep, spec.trace, db)  # refused: nothing written
        sessions = _twin_sessions(from_twin_session, twin_db)
        for variant in spec.teacher_variants + spec.val_variants + tuple(r.variant for r in runs):
            load_source(spec.trace, variant, spec.data)  # missing data fails before any run
    out.mkdir(parents=True, exist_ok=True)
    with expected_errors(), progress_bar("distilling") as progress:
        runs_on = ray_executor(executor, address, num_cpus)
        with runs_on or nullcontext():
            result = distil(
                spec, workers=workers, executor=runs_on, log=console.print,
                progress=progress, recorded=recorded, runs=runs, sessions=sessions,
            )  # fmt: skip
    result.policy.save(out / "policy.npz")
    if recorded is None or runs or sessions:
        result.margins.save(out / "margins.npz")
    (out / "spec.json").write_text(json.dumps(result.card_spec, indent=2))
    (out / "metrics.json").write_text(json.dumps(result.metrics, indent=2))
    console.print(
        f"distilled in {result.seconds:.1f} s from {int(result.metrics['decisions'])} compared "
        f"decisions; files in {out}"
    )
    if register:
        with expected_errors():
            card = register_model(spec, result, register, models_dir)
        console.print(f"registered [bold]ai:{card.ref}[/]")


def _stored_runs(
    from_runs: str | None, from_sweep: str | None, trace: str, db: str | None
) -> list[StoredRun]:
    """The stored runs of ``--from-runs`` and ``--from-sweep`` (each once, in that order),
    all checked before any work starts."""
    from twinsched.training.distil.from_runs import load_runs, sweep_runs

    ids = parse_seeds(from_runs) if from_runs else []
    if from_sweep:
        ids += sweep_runs(from_sweep, db)
    return load_runs(list(dict.fromkeys(ids)), trace, db) if ids else []


def _twin_sessions(ids: str | None, twin_db: str | None) -> list[TwinSession]:
    """The twin sessions of ``--from-twin-session`` (each once, in order), all checked before
    any work starts."""
    from twinsched.training.distil.from_twin import load_sessions

    return load_sessions(twin_db, parse_seeds(ids)) if ids else []
