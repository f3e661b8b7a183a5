"""``twinsched train``: cloning (+ DAgger) from a teacher, PPO, evolution strategies; register."""

from __future__ import annotations

import functools
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.executor import AddressOpt, CpusOpt, ExecutorName, ExecutorOpt, ray_executor
from twinsched.cli.options import (
    SEED_RANGE,
    DataOpt,
    DbOpt,
    ModelsDirOpt,
    check_name,
    checked_opt,
    float_in,
    float_opt,
    int_opt,
    load_source,
    out_dir_opt,
    parse_seeds,
    seed_opt,
    seeds_opt,
    source_data,
    split_list,
)

if TYPE_CHECKING:
    from twinsched.model.cluster import Scenario


WIDTHS = "[numbers 0..1e+06, at least one]"


def _names(text: str) -> tuple[str, ...]:
    return tuple(split_list(text))


def _ints(text: str) -> tuple[int, ...]:
    """Seeds: comma-separated integers and ranges like 0-9 (:func:`parse_seeds`)."""
    return tuple(parse_seeds(text))


def _floats(text: str) -> tuple[float, ...]:
    """Comma-separated finite widths, each in 0..1e6; at least one."""
    parse = float_in(0, 1e6)
    if not (widths := tuple(parse(v) for v in split_list(text))):
        raise typer.BadParameter(f"no width in {text!r}: give numbers like 1,2,5")
    return widths


def _gate_seeds(text: str) -> tuple[int, ...]:
    """Seeds of the tie-gate grid: none (no gates) or a seed list like 0-2."""
    return tuple(parse_seeds(text)) if text.strip() else ()


def _prior(text: str) -> tuple[tuple[str, float], ...]:
    parse = float_in(-1e6, 1e6)
    out = []
    for item in split_list(text):
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise typer.BadParameter(f"--prior wants FEATURE=WEIGHT, got {item!r}")
        out.append((name.strip(), parse(value)))
    return tuple(out)


def train_command(
    trace: Annotated[str, typer.Option(help="Trace whose variants train the policy.")] = (
        "alibaba-gpu-2023"
    ),
    train_variants: Annotated[str, typer.Option(help="Comma-separated training variants.")] = (
        "default,cpu050,gpushare40,multigpu30,gpuspec10"
    ),
    val_variants: Annotated[
        str | None,
        typer.Option(
            help="Validation variants (early stopping); default: cpu100, or with --scenario "
            "the training scenarios"
        ),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="Stored scenarios to train on, comma-separated (see `twinsched scenarios "
            "list`), read from --db; stands for --trace store --train-variants NAMES"
        ),
    ] = None,
    db: DbOpt = None,
    teacher: Annotated[str, typer.Option(help="Scheduler whose decisions are cloned.")] = "fgd",
    seeds: Annotated[str, seeds_opt("Fill-up orders collected per variant.")] = "0",
    dagger_rounds: Annotated[int, int_opt("Rounds acting with the student.", 0, 100)] = 0,
    epochs: Annotated[int, int_opt("Most epochs per round.", 0, 10000)] = 8,
    patience: Annotated[int, int_opt("Stop after this many worse epochs.", 0, 10000)] = 2,
    candidates: Annotated[int, int_opt("Nodes kept per decision.", 1, 4096)] = 48,
    seed: Annotated[int, seed_opt("Seed of initialisation and batching.")] = 0,
    prior: Annotated[
        str,
        checked_opt(
            "Start from a linear score, e.g. fgd_score=100 (FGD) [weights -1e+06..1e+06]", _prior
        ),
    ] = "",
    ppo_updates: Annotated[int, int_opt("PPO updates after cloning (0: none).", 0, 100000)] = 0,
    ppo_steps: Annotated[int, int_opt("Environment steps per PPO update.", 1, 10000000)] = 512,
    teacher_ties: Annotated[
        bool, typer.Option(help="Nodes the teacher scored as high as its choice count as right.")
    ] = False,
    teacher_contested_only: Annotated[
        bool,
        typer.Option(
            help="Keep only decisions where the teacher compared candidates (a look-ahead "
            "teacher's rollout decisions); those candidates follow its choice in the data."
        ),
    ] = False,
    es_generations: Annotated[
        int, int_opt("Evolution-strategies generations on fill-up outcomes (0: none).", 0, 100000)
    ] = 0,
    es_population: Annotated[int, int_opt("ES candidates per generation (even).", 2, 10000)] = 12,
    es_episodes: Annotated[int, int_opt("Fill-up runs per ES candidate.", 1, 10000)] = 16,
    es_sigma: Annotated[
        float, float_opt("ES residual step (FGD points per std).", 0, 100, open_lo=True)
    ] = 0.05,
    es_sigma_width: Annotated[
        float, float_opt("ES tie-width step, in log2 of the width.", 0, 100)
    ] = 0.5,
    es_sigma_slope: Annotated[
        float,
        float_opt("ES step of the widths' slopes on the workload mix (0: no slopes).", 0, 100),
    ] = 0.125,
    es_base_width: Annotated[
        float,
        float_opt(
            "Tie width the rule starts from. On FGD's integer scores (--prior "
            "fgd_score=100) any width <= 1 is FGD exactly: from below 1, a pod kind leaves "
            "FGD only where wider ties keep winning.",
            0,
            1000000.0,
            open_lo=True,
        ),
    ] = 1.0,
    es_lr: Annotated[
        float, float_opt("ES Adam step, in units of sigma.", 0, 100, open_lo=True)
    ] = 0.5,
    es_features: Annotated[
        str,
        typer.Option(
            help="Features of a linear residual searched by ES ('standard': "
            "evolution.ES_FEATURES); none: only the tie rule is searched."
        ),
    ] = "",
    es_val_on_train: Annotated[
        bool,
        typer.Option(
            help="ES and tie gates also validate on each training variant, at an unseen order."
        ),
    ] = False,
    es_patience: Annotated[
        int, int_opt("Stop ES after this many generations without a better one.", 1, 100000)
    ] = 8,
    gate_seeds: Annotated[
        str,
        checked_opt(
            "Tie gates instead of ES: fill-up orders (e.g. 0-2) of a grid that widens one "
            "pod kind's ties at a time on every training variant; each kind then leaves FGD's "
            "exact ties only where the workload mix is like training variants that gained "
            "[none, or " + SEED_RANGE + "]",
            _gate_seeds,
        ),
    ] = "",
    gate_widths: Annotated[
        str, checked_opt(f"Tie widths measured by the gate grid {WIDTHS}", _floats)
    ] = ("2,3,4,6"),
    gate_z: Annotated[
        float, float_opt("Gate gains count at mean - z standard errors over seeds.", 0, 100)
    ] = 1.0,
    gate_min_variants: Annotated[
        int, int_opt("A gate opens on at least this many training variants.", 1, 1000)
    ] = 2,
    gate_depth: Annotated[
        int, int_opt("Conditions on the workload mix per gate (all must hold).", 1, 16)
    ] = 1,
    val_seeds: Annotated[str, seeds_opt("Fill-up orders of the validation runs.")] = "100",
    workers: Annotated[
        int, int_opt("Processes for ES and gate runs (0: one per core).", 0, 1024)
    ] = 0,
    executor: ExecutorOpt = ExecutorName.local,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    tie_widths: Annotated[
        str,
        checked_opt(
            f"Score tie widths tried on validation (0 = exact always is) {WIDTHS}", _floats
        ),
    ] = "1,2,5,10,20,40",
    out: Annotated[Path, out_dir_opt("Curves, checkpoints, policy.")] = Path("out/train"),
    register: Annotated[
        str | None, typer.Option(help="Register the result as model NAME (ai:NAME).")
    ] = None,
    models_dir: ModelsDirOpt = None,
    data: DataOpt = None,
) -> None:
    """Train a placement policy (imitation, PPO, evolution strategies); optionally register it."""
    from twinsched.sim.scenarios import STORE
    from twinsched.training import artifacts
    from twinsched.training import specs as ts
    from twinsched.training.evolution import ES_FEATURES
    from twinsched.training.recipe import train

    console, err = make_console(), make_console(stderr=True)
    if scenario is not None:
        trace, train_variants = STORE, ",".join(check_name(n) for n in _names(scenario))
    with expected_errors():
        source = source_data(trace, data, db)
        # parsed in the order the options are checked (the first bad one is reported)
        clone_seeds, start, resolutions = _ints(seeds), _prior(prior), _floats(tie_widths)
        val_orders = _ints(val_seeds)
        features = ES_FEATURES if es_features == "standard" else _names(es_features)
        gate_orders, widths = _gate_seeds(gate_seeds), _floats(gate_widths)
        recipe = ts.Recipe(
            data=ts.DataSpec(
                trace=trace, train_variants=_names(train_variants),
                val_variants=_names(val_variants or (train_variants if scenario else "cpu100")),
                val_seeds=val_orders, data=source, val_on_train=es_val_on_train,
            ),
            clone=ts.ClonePhase(
                teacher=teacher, seeds=clone_seeds, epochs=epochs, patience=patience,
                candidates=candidates, prior=start, teacher_ties=teacher_ties,
                teacher_contested_only=teacher_contested_only,
            ),
            dagger=ts.DaggerPhase(rounds=dagger_rounds),
            ppo=ts.PpoPhase(updates=ppo_updates, steps=ppo_steps),
            es=ts.EsPhase(
                generations=es_generations, population=es_population, episodes=es_episodes,
                sigma=es_sigma, sigma_width=es_sigma_width, sigma_slope=es_sigma_slope,
                base_width=es_base_width, lr=es_lr, patience=es_patience,
                features=features,
            ),
            gates=ts.GatePhase(
                seeds=gate_orders, widths=widths, z=gate_z,
                min_variants=gate_min_variants, depth=gate_depth,
            ),
            ties=ts.TiePhase(resolutions=resolutions),
            seed=seed, workers=workers,
        )  # fmt: skip

    @functools.cache
    def load(variant: str) -> Scenario:
        chosen: Scenario = load_source(trace, variant, source)
        return chosen

    with expected_errors():
        for variant in recipe.data.train_variants + recipe.data.val_variants:
            load(variant)  # missing data fails here, before anything is written
    out.mkdir(parents=True, exist_ok=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with expected_errors(), Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("training", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        runs_on = ray_executor(executor, address, num_cpus)  # None: --workers processes
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
