"""``twinsched train``: cloning (+ DAgger) from a teacher, PPO, evolution strategies; register.

What to train is a recipe file (``--recipe``, :mod:`twinsched.training.recipe_file`); the
options are what a file should not fix: where the data, the results and the model go, the
machine's workers and executor, and the two values a study repeats with (``--seed``,
``--scenario``).
"""

from __future__ import annotations

import functools
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
    check_name,
    int_opt,
    load_source,
    out_dir_opt,
    source_data,
    split_list,
)
from twinsched.cli.recipes import PrintRecipeOpt, RecipeOpt, RegisterOpt
from twinsched.training.recipe_check import SEED_MAX
from twinsched.training.recipe_file import WORKERS_MOST

if TYPE_CHECKING:
    from twinsched.experiments.executors import Executor
    from twinsched.model.cluster import Scenario
    from twinsched.training.specs import Recipe


def _effective(
    recipe_file: Path | None, scenario: str | None, seed: int | None, workers: int | None
) -> Recipe:
    """The file's recipe (or the default one) with the options that override it."""
    from twinsched.training.recipe_file import train_recipe

    scenarios = tuple(check_name(n) for n in split_list(scenario or ""))
    if scenario is not None and not scenarios:
        raise typer.BadParameter("--scenario needs at least one stored scenario's name")
    recipe = train_recipe(recipe_file, scenarios)
    if seed is not None:
        recipe = replace(recipe, seed=seed)
    return recipe if workers is None else replace(recipe, workers=workers)


def _continuum(recipe_file: Path) -> bool:
    from twinsched.training.continuum.recipe import is_continuum

    with expected_errors():
        return is_continuum(recipe_file)


def _train_continuum(
    recipe_file: Path,
    print_recipe: bool,
    seed: int | None,
    workers: int | None,
    out: Path,
    register: str | None,
    models_dir: Path | None,
    executor: Executor | None,
) -> None:
    """A continuum recipe (one with ``[objective]``): ES for the objective, on replays."""
    import json

    from twinsched.training.continuum import train as continuum
    from twinsched.training.continuum.recipe import read_recipe

    console = make_console()
    recipe = read_recipe(recipe_file)
    if seed is not None:
        recipe = replace(recipe, seed=seed)
    if workers is not None:
        recipe = replace(recipe, workers=workers)
    if print_recipe:
        typer.echo(json.dumps(recipe.record(), indent=1))
        return
    done = continuum.train(recipe, out, log=console.print, executor=executor)
    val, ref = done.trained.validation, done.trained.reference
    console.print(
        f"trained in {done.cpu_s:.1f} CPU s ({done.trained.runs} replays); validation "
        f"objective {val.objective:.4f} (reference {recipe.reference}: {ref.objective:.4f}), "
        f"fitness {val.fitness:.4f}; files in {out}"
    )
    if register:
        card = continuum.register(recipe, done.trained, register, models_dir)
        console.print(f"registered [bold]ai:{card.ref}[/]")


def train_command(
    recipe_file: RecipeOpt = None,
    print_recipe: PrintRecipeOpt = False,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="Stored scenarios to train on, comma-separated (see `twinsched scenarios "
            "list`), read from --db; they replace the recipe's trace and training variants "
            "(and its validation variants, unless the file names them)"
        ),
    ] = None,
    db: DbOpt = None,
    seed: Annotated[
        int | None,
        int_opt("Seed of initialisation and batching (default: the recipe's).", 0, SEED_MAX),
    ] = None,
    workers: Annotated[
        int | None,
        int_opt(
            "Processes for ES and gate runs (0: one per core; default: the recipe's).",
            0,
            WORKERS_MOST,
        ),
    ] = None,
    executor: ExecutorOpt = ExecutorName.local,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    out: Annotated[Path, out_dir_opt("Curves, checkpoints, policy.")] = Path("out/train"),
    register: RegisterOpt = None,
    models_dir: ModelsDirOpt = None,
    data: DataOpt = None,
) -> None:
    """Train a placement policy (imitation, PPO, evolution strategies); optionally register it."""
    from twinsched.training import artifacts
    from twinsched.training.recipe import train
    from twinsched.training.recipe_file import recipe_toml

    console = make_console()
    if recipe_file is not None and _continuum(recipe_file):
        runs_on = ray_executor(executor, address, num_cpus)
        with expected_errors(), runs_on or nullcontext():
            _train_continuum(recipe_file, print_recipe, seed, workers, out, register,
                             models_dir, runs_on)  # fmt: skip
        return
    with expected_errors():
        recipe = _effective(recipe_file, scenario, seed, workers)
    if print_recipe:
        typer.echo(recipe_toml(recipe), nl=False)
        return
    with expected_errors():
        source = source_data(recipe.data.trace, data, db)
        recipe = replace(recipe, data=replace(recipe.data, data=source))

    @functools.cache
    def load(variant: str) -> Scenario:
        chosen: Scenario = load_source(recipe.data.trace, variant, source)
        return chosen

    with expected_errors():
        for variant in recipe.data.train_variants + recipe.data.val_variants:
            load(variant)  # missing data fails here, before anything is written
    out.mkdir(parents=True, exist_ok=True)
    with expected_errors(), progress_bar("training") as progress:
        runs_on = ray_executor(executor, address, num_cpus)  # None: the recipe's workers
        with runs_on or nullcontext():  # one Ray for every phase
            result = train(
                recipe, load, out, log=console.print, progress=progress, executor=runs_on
            )
    console.print(
        f"trained in {result.seconds:.1f} s on {int(result.metrics['decisions'])} decisions; "
        f"validation allocation {result.metrics['val_alloc_pct']:.3f} %; files in {out}"
    )
    artifacts.write_spec(recipe, out)
    if register:
        card = artifacts.register(recipe, result, register, models_dir)
        console.print(f"registered [bold]ai:{card.ref}[/]")
