"""The ``twinsched`` command: one module per command group, mounted on ``app``.

Start-up stays light (``twinsched --help`` imports no database, dataframe, plotting, learning
or web library): the command modules import only typer, rich and light twinsched modules at
module level, and everything else inside the commands that use it. ``tests/cli/
test_startup.py`` holds that.
"""

from __future__ import annotations

from twinsched.cli import (
    agent,
    apps,
    bandits,
    distil,
    explain,
    flow,
    kinds,
    learning,
    models,
    run,
    scheduler,
    sim,
    store,
    sweep,
    tokens,
    train,
    twin,
    ui,
    workflows,
)
from twinsched.cli.entry import App

app = App(
    help="Train, evaluate and deploy schedulers for the device-edge-cloud-HPC continuum.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# The order of the mounts is the order of `twinsched --help`.
app.command("train")(train.train_command)
app.command("distil")(distil.distil_command)
app.add_typer(run.app)  # run, demo, optimum, schedulers, traces
app.add_typer(sweep.app, name="sweep", help="Grids of runs, resumable, on processes or Ray.")
app.add_typer(learning.app)  # autoscale, forecast-backtest, forecasters, policies
app.add_typer(workflows.app, name="workflow", help="Task DAGs across the continuum.")
app.add_typer(store.app, name="scenarios", help="The scenario store.")
app.add_typer(store.runs_app, name="runs", help="Recorded runs and their results.")
app.add_typer(bandits.app, name="bandits", help="Bandit posteriors kept across runs.")
app.add_typer(kinds.app, name="kinds", help="A model per job kind: fit the kinds and members.")
app.command("explain")(explain.explain_command)
app.add_typer(models.app, name="models", help="Models: ai:NAME schedulers, forecasters.")
app.add_typer(twin.app, name="twin", help="The digital twin service.")
app.add_typer(apps.app, name="apps", help="Applications on the twin: deploy, update, roll back.")
app.add_typer(scheduler.app, name="scheduler", help="The scheduler service (extender).")
app.add_typer(agent.app, name="agent", help="Agents from an agent file, as a service.")
app.add_typer(tokens.app, name="tokens", help="Tokens with a role and namespaces.")
app.add_typer(flow.app, name="flow", help="The training flow over services, as processes.")
app.add_typer(sim.app, name="vte", help="The VTE as a live system: metrics for Prometheus.")
app.command("ui")(ui.ui_command)

__all__ = ["app"]
