"""``twinsched bandits``: a bandit's posterior kept in the store across runs.

``run`` fills a trace up with a bandit, each seed's run starting from the posterior kept for
(bandit, scenario, mode) and writing back what it learned; ``warm`` starts (or adds to) that
posterior from stored runs' reward tables (the evaluator's records, every member's reward of
every decision); ``show`` prints it. Tables: ``bandit_states`` (``store/bandits.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import (
    DbOpt,
    SeedsOpt,
    TraceOpt,
    VariantOpt,
    checked_opt,
    float_opt,
    parse_seeds,
)

if TYPE_CHECKING:
    from twinsched.scheduling.fanout.bandit import Bandit

app = typer.Typer(no_args_is_help=True)
NameArg = Annotated[str, typer.Argument(help="The bandit's name, e.g. 'bandit:fgd|bestfit'.")]
KeyOpt = Annotated[
    str,
    typer.Option(
        "--scenario", help="Scenario key of the kept posterior (default TRACE, or TRACE/VARIANT)."
    ),
]


def _bandit(name: str) -> Bandit:
    from twinsched.errors import TwinschedError
    from twinsched.scheduling import registry
    from twinsched.scheduling.fanout.bandit import Bandit

    made = registry.create(name)
    if not isinstance(made, Bandit):
        raise TwinschedError(f"'{name}' is not a bandit (bandit:A|B)")
    return made


@app.command("run")
def run_command(
    name: NameArg,
    trace: TraceOpt = "alibaba-gpu-2023",
    variant: VariantOpt = "",
    seeds: SeedsOpt = "0",
    scenario: KeyOpt = "",
    db: DbOpt = None,
) -> None:
    """Fill-up runs that start from the kept posterior and keep what they learned."""
    from twinsched.sim import run_fillup
    from twinsched.store.bandits import load_posterior, save_posterior
    from twinsched.traces.registry import load

    key = scenario or (f"{trace}/{variant}" if variant else trace)
    with expected_errors():
        bandit, sc = _bandit(name), load(trace, variant)
        for seed in parse_seeds(seeds):
            bandit.prior = load_posterior(name, key, "fillup", db)
            result = run_fillup(sc, bandit, seed, target_pct=100)
            runs = save_posterior(name, key, "fillup", bandit.posterior(), db)
            last = result.curve[-1] if result.curve else {}
            make_console().print(
                f"seed {seed}: GPU allocation {last.get('gpu_alloc_ratio_pct', 0.0):.2f} % at "
                f"{last.get('arrived_gpu_pct', 0.0):.0f} % arrived; "
                f"kept for {key} (fillup), {runs} runs",
                highlight=False,
            )


@app.command("warm")
def warm_command(
    name: NameArg,
    runs: Annotated[
        str,
        checked_opt(
            "Stored run ids, e.g. 1-8 (twinsched runs list) "
            "[run ids: integers and low-high ranges, at most 10000]",
            parse_seeds,
        ),
    ],
    scenario: KeyOpt = "alibaba-gpu-2023",
    weight: Annotated[
        float, float_opt("Share of each run's decisions counted", 0.0, 1.0, open_lo=True)
    ] = 1.0,
    db: DbOpt = None,
) -> None:
    """Add stored runs' reward tables (every member's reward) to the kept posterior."""
    from twinsched.errors import TwinschedError
    from twinsched.scheduling.fanout.warm import warm_posterior
    from twinsched.store.bandits import load_posterior, save_posterior
    from twinsched.store.runs import get_run

    with expected_errors():
        bandit = _bandit(name)
        results = [get_run(i, db, decisions=False).result for i in parse_seeds(runs)]
        tables = [r.rewards for r in results if r is not None and r.rewards]
        start = load_posterior(name, scenario, "fillup", db)
        posterior, used = warm_posterior(tables, bandit.member_names, bandit.levels, start, weight)
        if not used:
            raise TwinschedError(
                f"no stored run among {runs} has the members and contexts of {name}"
            )
        saved = save_posterior(name, scenario, "fillup", posterior, db)
        make_console().print(
            f"warmed {name} for {scenario} (fillup) from {used} of {len(results)} runs "
            f"({sum(map(sum, posterior.count))} rewards); {saved} writes",
            highlight=False,
        )


@app.command("show")
def show_command(name: NameArg, scenario: KeyOpt = "alibaba-gpu-2023", db: DbOpt = None) -> None:
    """The kept posterior: per context, each member's count and mean reward."""
    from twinsched.store.bandits import load_posterior

    with expected_errors():
        kept = load_posterior(name, scenario, "fillup", db)
    if kept is None:
        make_console().print(f"nothing kept for {name} on {scenario} (fillup)", highlight=False)
        return
    for context, (count, total) in enumerate(zip(kept.count, kept.total, strict=True)):
        cells = [
            f"{m} {n} x {t / max(n, 1):+.4f}"
            for m, n, t in zip(kept.members, count, total, strict=True)
        ]
        make_console().print(f"context {context}: " + ", ".join(cells), highlight=False)
