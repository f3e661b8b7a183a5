"""``twinsched distil``: a reranker learned from a look-ahead's rollout values; register it."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.executor import AddressOpt, CpusOpt, ExecutorName, ExecutorOpt, ray_executor
from twinsched.cli.options import (
    DataOpt,
    ModelsDirOpt,
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

TEACHER = "lookahead:fgd/c=4/h=32/s=4/a=35"
TRAIN_VARIANTS = (  # every openb variant but the six held out (bench/heldout.py)
    "default,cpu0,cpu050,cpu100,cpu200,cpu250,cpu300,gpushare20,gpushare40,gpushare80,"
    "gpushare100,multigpu20,multigpu30,multigpu50,gpuspec05,gpuspec10,gpuspec25,gpuspec33"
)


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split("x") if x)
    except ValueError:
        sizes = (0,)
    if any(not 1 <= s <= 4096 for s in sizes):
        raise typer.BadParameter(f"'{text}': layer sizes 1..4096 joined by x, e.g. 32 or 64x64")
    return sizes


def distil_command(
    teacher: Annotated[str, typer.Option(help="The look-ahead whose rollouts are learned.")] = (
        TEACHER
    ),
    trace: Annotated[str, typer.Option(help="Trace whose variants train the reranker.")] = (
        "alibaba-gpu-2023"
    ),
    variants: Annotated[str, typer.Option(help="Comma-separated training variants.")] = (
        TRAIN_VARIANTS
    ),
    seeds: Annotated[str, seeds_opt("Teacher fill-up orders per training variant.")] = "0-1",
    val_variants: Annotated[
        str, typer.Option(help="Validation variants (paired with FGD); empty: none.")
    ] = TRAIN_VARIANTS,
    val_seeds: Annotated[str, seeds_opt("Fill-up orders of the validation runs.")] = "100-101",
    hidden: Annotated[str, typer.Option(help="Hidden layer sizes, e.g. 32 or 64x64.")] = "32",
    epochs: Annotated[int, int_opt("Epochs over the recorded decisions.", 1, 10000)] = 15,
    frag_weight: Annotated[
        float, float_opt("Fragmentation added worth one GPU milli placed.", 0, 1000)
    ] = 1.0,
    mix: Annotated[
        bool, typer.Option(help="Let the model read the workload mix (it can memorise variants).")
    ] = False,
    margin: Annotated[
        float, float_opt("Score above FGD's first needed to overrule it (served).", 0, 1000)
    ] = 0.005,
    gate_min_gain: Annotated[
        float,
        float_opt(
            "Validation gain (points) a variant needs for the mix gate to keep the model "
            "there; -100 fits no gate.",
            -100,
            100,
        ),
    ] = 0.1,
    seed: Annotated[int, seed_opt("Seed of initialisation and batching.")] = 0,
    workers: Annotated[int, int_opt("Local processes (0: one per core).", 0, 1024)] = 0,
    executor: ExecutorOpt = ExecutorName.local,
    address: AddressOpt = None,
    num_cpus: CpusOpt = 2,
    out: Annotated[Path, out_dir_opt("The reranker's policy.npz and spec.")] = Path("out/distil"),
    register: Annotated[
        str | None, typer.Option(help="Register the result as model NAME (ai:NAME).")
    ] = None,
    margins: Annotated[
        Path | None,
        typer.Option(
            help="Fit on margins recorded before (an earlier run's margins.npz) "
            "instead of running the teacher.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    models_dir: ModelsDirOpt = None,
    data: DataOpt = None,
) -> None:
    """Distil a look-ahead into a fast reranker of FGD's best candidates; optionally register."""
    import json

    from twinsched.training.distil import DistilSpec, Margins, teacher_shortlist
    from twinsched.training.distil_run import distil
    from twinsched.training.distil_run import register as register_model

    console, err = make_console(), make_console(stderr=True)
    with expected_errors():
        source = source_data(trace, data, None)
        spec = DistilSpec(
            teacher=teacher, trace=trace, variants=tuple(split_list(variants)),
            seeds=tuple(parse_seeds(seeds)), val_variants=tuple(split_list(val_variants)),
            val_seeds=tuple(parse_seeds(val_seeds)), data=source, hidden=_hidden(hidden),
            epochs=epochs, frag_weight=frag_weight, mix=mix, margin=margin,
            gate_min_gain=gate_min_gain if gate_min_gain > -100 else None, seed=seed,
        )  # fmt: skip
        teacher_shortlist(teacher)  # a teacher that is not a look-ahead fails here
        recorded = Margins.load(margins) if margins is not None else None
        for variant in spec.variants + spec.val_variants:
            load_source(trace, variant, source)  # missing data fails before any run
    out.mkdir(parents=True, exist_ok=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with expected_errors(), Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("distilling", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        runs_on = ray_executor(executor, address, num_cpus)
        with runs_on or nullcontext():
            result = distil(
                spec, workers=workers, executor=runs_on, log=console.print,
                progress=progress, recorded=recorded,
            )  # fmt: skip
    result.policy.save(out / "policy.npz")
    if recorded is None:
        result.margins.save(out / "margins.npz")
    (out / "spec.json").write_text(json.dumps(spec.record(), indent=2))
    (out / "metrics.json").write_text(json.dumps(result.metrics, indent=2))
    console.print(
        f"distilled in {result.seconds:.1f} s from {int(result.metrics['decisions'])} compared "
        f"decisions; files in {out}"
    )
    if register:
        with expected_errors():
            card = register_model(spec, result, register, models_dir)
        console.print(f"registered [bold]ai:{card.ref}[/]")
