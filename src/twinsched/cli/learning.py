"""``twinsched autoscale`` and ``twinsched forecast-backtest``: a Typer app for the main CLI.

Wire it in with ``app.add_typer(twinsched.cli.learning.app)`` (commands join the top level).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from twinsched.cli.console import error_exit, make_console
from twinsched.cli.options import (
    ModelsDirOpt,
    float_opt,
    in_dir_opt,
    int_opt,
    out_dir_opt,
    out_path_opt,
    seed_opt,
    split_list,
)
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.learning.series import LoadSeries

app = typer.Typer(help="Learning plane: forecasting and predictive autoscaling.")


_WIDTH = 200  # columns off a terminal
WINDOW_MOST = 7 * 24 * 60  # minutes: a week


def _window(text: str) -> str:
    """``text`` if it is a duration of 1 minute to a week (3h, 20m, 1h30m, 45)."""
    from twinsched.learning.autoscale.experiment import parse_minutes

    try:
        minutes = parse_minutes(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    if not 1 <= minutes <= WINDOW_MOST:
        raise typer.BadParameter(f"{text!r} is outside the accepted range 1m..{WINDOW_MOST}m")
    return text


class BinStat(StrEnum):
    mean = "mean"
    max = "max"


SERIES = ("nasa-http-1995", "bank-calls-2003")
POLICIES = "reactive,reactive-memory,predictive:lstm,oracle,predictive+fallback:lstm"
FORECASTERS = "seasonal-naive,seasonal-naive-weekly,ets,lstm"
Window = Annotated[str, typer.Option(help="duration: 20m, 3h, 1h30m [1m..1w]", callback=_window)]
Seed = Annotated[int, seed_opt("seed of latencies and training")]
DataRoot = Annotated[Path | None, in_dir_opt("data root (default ../shared/data)")]


@app.command()
def autoscale(
    trace: Annotated[str, typer.Option(help="nasa-http-1995 or bank-calls-2003")] = SERIES[0],
    policies: Annotated[str, typer.Option(help="comma-separated policy names")] = POLICIES,
    window: Window = "3h",
    sweep: Annotated[bool, typer.Option(help="also sweep windows 20m, 40m, 1h, 2h, 3h")] = False,
    seed: Seed = 0,
    train_weeks: Annotated[int, int_opt("weeks of the trace to train on", 1, 52)] = 1,
    eval_weeks: Annotated[
        float | None,
        float_opt("evaluate only this many weeks (default: all the rest)", 0, 520, open_lo=True),
    ] = None,
    capacity: Annotated[
        float, float_opt("requests/min per instance at 100%", 0, 1e9, open_lo=True)
    ] = 40.0,
    slo_ms: Annotated[
        float, float_opt("SLO on the p95 latency per minute", 0, 3.6e6, open_lo=True)
    ] = 150.0,
    tolerance: Annotated[float, float_opt("violation above slo*(1+tolerance)", 0, 100)] = 0.1,
    out: Annotated[Path, out_dir_opt("folder for results.json, tables and plots")] = Path(
        "out/autoscale"
    ),
    data: DataRoot = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Train on the first week(s), evaluate every policy on the rest; table and plots.
    ``predictive:stored:NAME[@VERSION]`` loads a forecaster stored by ``forecast-fit``."""
    from twinsched.learning import report
    from twinsched.learning.autoscale.experiment import AutoscaleSpec, parse_minutes, run_experiment
    from twinsched.learning.autoscale.experiment import sweep as run_sweep
    from twinsched.learning.autoscale.service import ServiceConfig
    from twinsched.learning.series import load_series

    console = make_console(width=_WIDTH)
    try:
        series = load_series(trace, data)
        service = ServiceConfig(capacity=capacity, slo_p95_ms=slo_ms, tolerance=tolerance)
        spec = AutoscaleSpec(
            trace,
            tuple(split_list(policies)),
            parse_minutes(window),
            seed,
            train_weeks,
            service,
            eval_weeks,
            models_dir,
        )
        runs = run_experiment(series, spec)
        rows = [run.row for run in runs]
        console.print(report.rich_table(rows, report.AUTOSCALE_COLUMNS, _title(spec, series)))
        out.mkdir(parents=True, exist_ok=True)
        report.plot_timeline(runs, out / "timeline.png")
        report.plot_summary(rows, out / "summary.png")
        sweep_rows: list[dict[str, Any]] = []
        if sweep:
            sweep_rows = [run.row for run in run_sweep(series, spec)]
            console.print(report.rich_table(sweep_rows, report.AUTOSCALE_COLUMNS, "window sweep"))
            report.plot_sweep(sweep_rows, out / "sweep.png")
    except (TwinschedError, ValueError) as exc:
        raise error_exit(exc) from exc
    margins = {run.row["policy"]: run.margin for run in runs if run.margin is not None}
    (out / "results.json").write_text(
        json.dumps(
            {"spec": _spec_json(spec), "rows": rows, "margins": margins, "sweep": sweep_rows},
            indent=1,
        )
    )
    (out / "table.md").write_text(
        report.markdown_table(rows + sweep_rows, report.AUTOSCALE_COLUMNS)
    )
    console.print(
        f"wrote {out}/: results.json, table.md, timeline.png, summary.png"
        + (", sweep.png" if sweep else "")
    )


@app.command("forecast-backtest")
def forecast_backtest(
    traces: Annotated[str, typer.Option(help="comma-separated traces")] = ",".join(SERIES),
    forecasters: Annotated[
        str, typer.Option(help="forecasters, comma-separated (also stored:NAME, stored:NAME@V)")
    ] = FORECASTERS,
    horizon: Window = "3h",
    seed: Seed = 0,
    train_weeks: Annotated[int, int_opt("weeks to fit on (the rest is rolled over)", 1, 52)] = 1,
    bin_stat: Annotated[
        BinStat, typer.Option(help="a trace's 5-minute bins: mean, or max as forecast-fit's")
    ] = BinStat.mean,
    out: Annotated[Path | None, out_dir_opt("write backtest.json and backtest.md here")] = None,
    data: DataRoot = None,
    dataset: Annotated[
        Path | None,
        typer.Option(help="a twin dataset (twinsched twin export) instead of --traces"),
    ] = None,
    metric: Annotated[str, typer.Option(help="the dataset's metric to forecast")] = "",
    node: Annotated[str | None, typer.Option(help="the dataset's node (if several)")] = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Rolling-origin backtest of every forecaster: fit on the first week(s), roll over the
    rest. A ``stored:NAME`` forecaster is loaded, not refitted, and only if it was fitted on
    this training part (same trace, weeks and bins: ``--bin-stat max`` as forecast-fit)."""
    from twinsched.learning import report
    from twinsched.learning.autoscale.experiment import parse_minutes
    from twinsched.learning.backtest import BacktestSpec, rolling_origin

    console = make_console(width=_WIDTH)
    rows: list[dict[str, Any]] = []
    try:
        minutes = parse_minutes(horizon)
        for series in _backtest_series(traces, data, dataset, metric, node, bin_stat.value):
            steps = max(minutes // series.step_minutes, 1)
            train = _train_steps(series, train_weeks, steps)
            spec = BacktestSpec(train, steps, steps, seed, models_dir=models_dir)
            for name in split_list(forecasters):
                result = rolling_origin(name, series, spec)
                rows.append(
                    {
                        "series": series.name,
                        "forecaster": name,
                        **vars(result.score),
                        "fit_seconds": result.fit_seconds,
                        **result.extra,
                    }
                )
    except (TwinschedError, ValueError) as exc:
        raise error_exit(exc) from exc
    title = (
        f"rolling-origin backtest, 5-minute {bin_stat.value} bins, window {horizon}, "
        f"fit on {train_weeks} week(s)"
    )
    console.print(report.rich_table(rows, report.BACKTEST_COLUMNS, title))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "backtest.json").write_text(json.dumps(rows, indent=1))
        (out / "backtest.md").write_text(report.markdown_table(rows, report.BACKTEST_COLUMNS))


def _train_steps(series: LoadSeries, weeks: int, horizon: int) -> int:
    """The steps of ``weeks`` weeks, if a window of ``horizon`` steps is left after them."""
    train = weeks * series.week
    if train + horizon > len(series):
        most = (len(series) - horizon) // series.week
        raise ValueError(
            f"{series.name} has {len(series) / series.week:.1f} weeks; --train-weeks {weeks} "
            f"leaves no window to forecast: it is outside 1..{most}"
        )
    return train


@app.command("forecast-fit")
def forecast_fit(
    forecaster: Annotated[str, typer.Option(help="forecaster to fit (see twinsched forecasters)")],
    register: Annotated[str, typer.Option(help="model name to store the fit under (new version)")],
    trace: Annotated[str, typer.Option(help="nasa-http-1995 or bank-calls-2003")] = SERIES[0],
    train_weeks: Annotated[int, int_opt("weeks of the trace to fit on", 1, 52)] = 1,
    holdout_days: Annotated[
        int, int_opt("also fit without the last N days (the autoscaler's margin) and score", 0, 6)
    ] = 2,
    window: Window = "3h",
    seed: Seed = 0,
    data: DataRoot = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Fit a forecaster as the autoscaler does and store it in the model registry; use it with
    ``twinsched autoscale --policies predictive:stored:NAME[@VERSION]``."""
    from twinsched.learning.autoscale.experiment import parse_minutes
    from twinsched.learning.forecast_fit import FitSpec, fit_and_register
    from twinsched.learning.series import load_series
    from twinsched.scheduling.ai.card_text import format_metrics
    from twinsched.scheduling.ai.model_store import check_name

    try:
        check_name(register)
        spec = FitSpec(
            forecaster, train_weeks, holdout_days, window_minutes=parse_minutes(window), seed=seed
        )
        card = fit_and_register(load_series(trace, data), spec, register, models_dir)
    except (TwinschedError, ValueError) as exc:
        raise error_exit(exc) from exc
    console = make_console(width=_WIDTH)
    console.print(f"registered {card.ref} ({card.kind}, {forecaster} on {trace}) in {card.path}")
    console.print(format_metrics(card.metrics))


def _backtest_series(
    traces: str,
    data: Path | None,
    dataset: Path | None,
    metric: str,
    node: str | None,
    bin_stat: str = "mean",
) -> Iterator[LoadSeries]:
    """The series to backtest: the dataset's (at its own step), else each trace's in 5-minute
    bins (``bin_stat``: their mean or max)."""
    from twinsched.learning.series import load_dataset, load_series, resample

    if dataset is not None:
        if not metric:
            raise typer.BadParameter("--dataset needs --metric")
        yield load_dataset(dataset, metric, node)
        return
    for trace in split_list(traces):
        yield resample(load_series(trace, data), 5, bin_stat)


@app.command("collect-dataset")
def collect_dataset(
    out: Annotated[Path, out_path_opt("dataset file to write: .parquet or .csv", "--out")],
    start: Annotated[float, float_opt("range start, Unix seconds", 0, 1e12, "--from")],
    end: Annotated[float, float_opt("range end, Unix seconds", 0, 1e12, "--to")],
    prometheus: Annotated[str, typer.Option(help="Prometheus base URL")] = "http://127.0.0.1:9090",
    query: Annotated[
        list[str] | None,
        typer.Option(help="NAME=PROMQL (repeatable; default: the collector's node queries)"),
    ] = None,
    step: Annotated[float, float_opt("seconds between points", 0, 86400, open_lo=True)] = 60.0,
) -> None:
    """Training data from Prometheus: range queries into a dataset (time, node, metric, value)."""
    from twinsched.cli.collectors import parse_queries

    if start > end:
        raise typer.BadParameter(f"--from {start:g} is after --to {end:g}")
    queries = parse_queries(query or [])
    try:
        from twinsched.traces.twin_dataset import dataset_format, write_dataset
        from twinsched.twin.collectors.prometheus import DEFAULT_QUERIES
        from twinsched.twin.collectors.prometheus_range import collect_range

        dataset_format(out)
        frame = collect_range(prometheus, queries or DEFAULT_QUERIES, start, end, step)
        write_dataset(frame, out)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    series = frame.groupby(["metric", "node"]).ngroups if len(frame) else 0
    typer.echo(f"wrote {len(frame)} points of {series} series to {out}")


@app.command("forecasters")
def list_forecasters() -> None:
    """The registered forecasters."""
    from twinsched.learning.forecasters import forecaster_names

    for name, description in forecaster_names().items():
        typer.echo(f"{name:24} {description}")


@app.command("policies")
def list_policies() -> None:
    """The registered autoscaling policies."""
    from twinsched.learning.autoscale.policies import POLICIES

    for name, (_, description) in POLICIES.items():
        typer.echo(f"{name:24} {description}")


def _title(spec: Any, series: Any) -> str:
    weeks = (len(series) - spec.train_weeks * series.week) / series.week
    if spec.eval_weeks is not None:
        weeks = min(weeks, spec.eval_weeks)
    return (
        f"{spec.trace}: trained on {spec.train_weeks} week(s), evaluated on {weeks:.1f} weeks, "
        f"window {spec.window_minutes} min, SLO p95 {spec.service.slo_p95_ms:g} ms "
        f"(+{spec.service.tolerance:.0%} tolerance)"
    )


def _spec_json(spec: Any) -> dict[str, Any]:
    service = spec.service
    return {
        "trace": spec.trace,
        "policies": list(spec.policies),
        "window_minutes": spec.window_minutes,
        "seed": spec.seed,
        "train_weeks": spec.train_weeks,
        "service": {
            "capacity": service.capacity,
            "latency": repr(service.latency),
            "slo_p95_ms": service.slo_p95_ms,
            "tolerance": service.tolerance,
            "move_penalty_ms": service.move_penalty_ms,
        },
    }
