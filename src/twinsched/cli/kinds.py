"""``twinsched kinds``: a model per job kind (``perkind:FILE``).

``fit`` clusters the training pods into kinds and chooses each kind's member by coordinate
ascent on the FGD protocol's objective (``training/kinds.py``); ``show`` prints a kind
model's kinds over a trace variant's pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import DataOpt, SeedsOpt, TraceOpt, int_opt, parse_seeds, split_list

if TYPE_CHECKING:
    from twinsched.model.cluster import Pods
    from twinsched.scheduling.fanout.kinds import KindModel

app = typer.Typer(no_args_is_help=True)
ModelArg = Annotated[Path, typer.Argument(help="A kind model file (kinds fit --out).")]


def print_kinds(model: KindModel, pods: Pods) -> None:
    """The kinds as a table: pods, mean requests, the member chosen."""
    from twinsched.scheduling.fanout.kinds import describe

    console = make_console()
    console.print(
        "| kind | pods | CPU (milli) | memory (MiB) | GPUs | GPU share (milli) | member |\n"
        "|---:|---:|---:|---:|---:|---:|---|",
        highlight=False,
    )
    for r in describe(model, pods):
        console.print(
            f"| {r['kind']} | {r['pods']} | {r['cpu_milli']:.0f} | {r['memory_mib']:.0f} | "
            f"{r['gpu_count']:.2f} | {r['gpu_milli']:.0f} | {r['member']} |",
            highlight=False,
        )


@app.command("fit")
def fit_command(
    out: Annotated[Path, typer.Option(help="Where to write the kind model (JSON).")],
    trace: TraceOpt = "alibaba-gpu-2023",
    variant: Annotated[str, typer.Option(help="Training variants, comma-separated.")] = "default",
    members: Annotated[
        str, typer.Option(help="Members to choose from, comma-separated scheduler names.")
    ] = "fgd,bestfit,gpupacking,gpuclustering",
    k: Annotated[int, int_opt("Number of kinds", 1, 64)] = 4,
    seeds: SeedsOpt = "0-4",
    kmeans_seed: Annotated[int, int_opt("Seed of the k-means++ draws", 0, 2**32 - 1)] = 0,
    runtime: Annotated[bool, typer.Option(help="Cluster on runtime too.")] = False,
    model_tied: Annotated[
        bool, typer.Option(help="Cluster on whether a pod is tied to some GPU models too.")
    ] = False,
    passes: Annotated[int, int_opt("Coordinate-ascent passes", 0, 10)] = 2,
    jobs: Annotated[int, int_opt("Parallel local processes", 1, 256)] = 1,
    data: DataOpt = None,
) -> None:
    """Cluster the training pods, choose each kind's member, write the model."""
    import tempfile

    from twinsched.errors import TwinschedError
    from twinsched.scheduling import registry
    from twinsched.scheduling.fanout.kinds import save
    from twinsched.training.kinds import FitSpec, fit, training_pods

    console = make_console()
    with expected_errors():
        names = tuple(split_list(members))
        if not names or len(set(names)) < len(names):
            raise TwinschedError("--members: give distinct scheduler names, e.g. fgd,bestfit")
        for name in names:
            registry.check(name)
        spec = FitSpec(
            trace, tuple(split_list(variant)), tuple(parse_seeds(seeds)), names, k,
            kmeans_seed, runtime, passes, jobs, str(data) if data else None, model_tied,
        )  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="kinds-") as work:
            result = fit(spec, Path(work), lambda line: console.print(line, highlight=False))
        save(result.model, out)
        print_kinds(result.model, training_pods(spec))
        console.print(
            f"chosen {result.score:.3f} vs best single {result.best_single} "
            f"{result.singles[result.best_single]:.3f} (training mean GPU allocation %); "
            f"wrote {out}",
            highlight=False,
        )


@app.command("show")
def show_command(
    model: ModelArg,
    trace: TraceOpt = "alibaba-gpu-2023",
    variant: Annotated[str, typer.Option(help="The variant whose pods to group.")] = "default",
    data: DataOpt = None,
) -> None:
    """A kind model's kinds over a variant's pods."""
    from twinsched.scheduling.fanout.kinds import load
    from twinsched.sim.scenarios import cached_scenario

    with expected_errors():
        kinds = load(model)
        pods = cached_scenario(trace, variant, str(data) if data else None).pods
    print_kinds(kinds, pods)
