"""``twinsched twin serve|compact|export|collect|snapshot``: the twin service and its data.

Mount in the main command with ``app.add_typer(twin.app, name="twin")``. Options are checked
before any work (ranges by the parser, then the database is opened and, for ``serve``, its
writer lease taken), so a bad value is one ``error:`` line, never a traceback or a deletion.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.collectors import collect
from twinsched.cli.console import error_exit
from twinsched.cli.options import broker_opt, float_opt, int_opt, out_path_opt, split_list
from twinsched.cli.security import RequireReadOpt, SslCaOpt, SslCertOpt, SslKeyOpt, tls_kwargs
from twinsched.cli.servers import quiet_gc
from twinsched.cli.twin_snapshot import snapshot
from twinsched.cli.twin_whatif import whatif
from twinsched.errors import TwinschedError

MAX_TIME = 1e12  # the twin's time range (twin.core.deltas.MAX_TIME)
MAX_SESSION = 2**31 - 1  # session numbers, as the twin's routes accept them

if TYPE_CHECKING:
    from threading import Event

    from fastapi import FastAPI

    from twinsched.twin.broker.consumer import BrokerConsumer

app = typer.Typer(
    help="The digital twin service: serve it over HTTP, compact its history.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def positive_seconds(value: float | None) -> float | None:
    """A duration option: a finite number > 0 (or not given). Local to the twin commands."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a finite number of seconds > 0, got {value}")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("must not be empty")
    return value


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def _log_level(value: str) -> str:
    if value.lower() not in LOG_LEVELS:
        raise typer.BadParameter(f"must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return value.lower()


Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="History database URL or SQLite path (default: $TWINSCHED_TWIN_DB, "
        "else the store's: $TWINSCHED_DB, else the user data folder).",
    ),
]


MIRROR_TOKEN_ENV = "TWINSCHED_TWIN_MIRROR_TOKEN"  # --mirror: a bearer token for Prometheus
GRACE_S = 3  # open dashboard streams (/ui/events) are closed after this at shutdown


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.", callback=_not_blank)] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind (1-65535).", min=1, max=65535)] = 8181,
    db: Db = None,
    token: Annotated[
        str | None,
        typer.Option(help="Bearer token for writes (default: $TWINSCHED_TWIN_TOKEN)."),
    ] = None,
    dev: Annotated[bool, typer.Option("--dev", help="Allow an empty or weak token.")] = False,
    snapshot: Annotated[
        Path | None, typer.Option(help="Start from this twin JSON document.")
    ] = None,
    trace: Annotated[
        str | None, typer.Option(help="Start from this trace's scenario (twinsched traces).")
    ] = None,
    variant: Annotated[str, typer.Option(help="Trace variant.")] = "",
    data: Annotated[Path | None, typer.Option(help="Trace data folder.")] = None,
    scenario: Annotated[
        str | None,
        typer.Option(help="Start from this stored scenario (the store at --db; see scenarios)."),
    ] = None,
    log_level: Annotated[
        str, typer.Option(help="uvicorn log level.", callback=_log_level)
    ] = "info",
    broker: Annotated[
        str | None, broker_opt("Also apply the batches published to this broker.")
    ] = None,
    mirror: Annotated[
        str | None,
        typer.Option(
            help="Mirror the cluster that kube-state-metrics shows in this Prometheus "
            "(base URL): nodes, pods, status and usage (docs/twin.md)."
        ),
    ] = None,
    mirror_interval: Annotated[
        float, float_opt("Seconds between two reads of --mirror.", 0, 86400, open_lo=True)
    ] = 15.0,
    require_read_token: RequireReadOpt = False,
    ssl_certfile: SslCertOpt = None,
    ssl_keyfile: SslKeyOpt = None,
    ssl_ca_certs: SslCaOpt = None,
) -> None:
    """Serve the twin under /api/v1; it restores its latest state from the database.

    A second twin on the same database is refused, naming the first (host, pid, start).
    With --broker it also consumes the stream (docs/telemetry.md); with --mirror it
    mirrors a cluster's kube-state-metrics from Prometheus (docs/twin.md)."""
    try:
        import uvicorn

        from twinsched.twin.api.app import create_app
        from twinsched.twin.core.settings import TwinSettings

        read = require_read_token or None
        settings = TwinSettings.from_env(token=token, db=db, dev=dev or None,
                                         read_token_required=read)  # fmt: skip
        tls = tls_kwargs(ssl_certfile, ssl_keyfile, ssl_ca_certs)
        document = _preload(snapshot, trace, variant, data, scenario, db)  # before the lease
        from twinsched.learning.forecasters import make_forecaster

        application = create_app(settings, forecasters=make_forecaster)
        source = f"snapshot {snapshot}" if snapshot else f"trace {trace or scenario}"
        _load(application, document, source)
        consumer = _consume(application, broker)
        stop_mirror = _mirror(application, mirror, mirror_interval)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    if not settings.auth_required:
        typer.secho("twin: --dev without a token: write routes are OPEN", fg="yellow", err=True)
    quiet_gc()
    try:
        uvicorn.run(
            application, host=host, port=port, log_level=log_level, access_log=False,
            timeout_graceful_shutdown=GRACE_S, **tls,
        )  # fmt: skip
    finally:
        if consumer is not None:
            consumer.stop()
        if stop_mirror is not None:
            stop_mirror.set()


def _load(application: FastAPI, document: object, source: str) -> None:
    """Make ``document`` (if any) the twin's state (the lease is given back if that fails)."""
    from twinsched.twin.api.app import close_app

    if document is None:
        return
    try:
        version = application.state.service.replace(document, source=source[:200])
    except BaseException:
        close_app(application)
        raise
    typer.echo(f"twin: loaded {_describe(document)} as version {version}", err=True)


def _mirror(application: FastAPI, prometheus: str | None, interval: float) -> Event | None:
    """Start the live mirror of ``prometheus`` into ``application``'s twin (None without)."""
    if prometheus is None:
        return None
    from twinsched.twin.collectors.ksm import KsmMirror

    token = os.environ.get(MIRROR_TOKEN_ENV) or None  # a bearer token for Prometheus
    mirror = KsmMirror(prometheus, application.state.service, interval=interval, token=token)
    application.state.mirror_stats = mirror.stats
    typer.echo(f"twin: mirroring {mirror.url} every {interval:g} s", err=True)
    return mirror.start()


def _consume(application: FastAPI, broker: str | None) -> BrokerConsumer | None:
    """Start the broker consumer of ``application``'s twin (None without ``broker``)."""
    if broker is None:
        return None
    from twinsched.twin.api.app import close_app
    from twinsched.twin.broker.consumer import BrokerConsumer

    state = application.state
    consumer = BrokerConsumer(state.service, broker)
    try:
        consumer.start()
    except BaseException:
        close_app(application)
        raise
    state.broker = consumer
    typer.echo(f"twin: consuming {consumer.url} as {consumer.durable}", err=True)
    return consumer


def _preload(
    snapshot: Path | None,
    trace: str | None,
    variant: str,
    data: Path | None,
    scenario: str | None,
    db: str | None,
) -> object:
    if snapshot is not None and (trace is not None or scenario is not None):
        other = "--trace" if trace is not None else "--scenario"
        raise TwinschedError(f"give --snapshot or {other}, not both")
    if snapshot is not None:
        import json

        from twinsched.model.schema import validate_document

        try:
            raw = json.loads(snapshot.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise TwinschedError(f"{snapshot}: {exc}") from exc
        return validate_document(raw)
    if trace is not None or scenario is not None:
        from twinsched.cli.options import load_source, scenario_source
        from twinsched.model.convert import scenario_to_document

        source = scenario_source(trace or "", variant, data, scenario, db)
        return scenario_to_document(load_source(*source))
    return None


def _describe(document: object) -> str:
    from twinsched.model.document import TwinDocument

    assert isinstance(document, TwinDocument)
    nodes = sum(len(p.nodes) for p in document.nodepools)
    pods = sum(len(j.pods) for j in document.jobs)
    return f"{nodes} nodes, {pods} pods"


@app.command()
def compact(
    db: Db = None,
    retention: Annotated[
        float | None,
        typer.Option(
            help="Drop history older than this many seconds (> 0).", callback=positive_seconds
        ),
    ] = None,
    downsample_after: Annotated[
        float | None,
        typer.Option(
            help="Average samples older than this many seconds (> 0).", callback=positive_seconds
        ),
    ] = None,
    step: Annotated[
        float | None,
        typer.Option(
            help="Downsampling bucket width in seconds (> 0, default 60).",
            callback=positive_seconds,
        ),
    ] = None,
    session: Annotated[
        int | None, int_opt("Only this session (default: every one).", 1, MAX_SESSION)
    ] = None,
) -> None:
    """Apply retention and downsampling to the history, per session, each on its own time
    (its newest sample). A session whose samples mix simulated and Unix time is left
    untouched and named (exit status 1)."""
    try:
        from twinsched.store.history import HistoryStore, compact
        from twinsched.twin.core.settings import TwinSettings

        settings = TwinSettings.from_env(db=db, dev=True)
        store = HistoryStore(settings.database_url())
        result = compact(
            store.engine,
            retention_s=retention if retention is not None else settings.retention_s,
            downsample_after_s=downsample_after
            if downsample_after is not None
            else settings.downsample_after_s,
            step=step if step is not None else settings.downsample_step_s,
            session=session,
        )
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    typer.echo(
        f"now={result.now} dropped_samples={result.dropped_samples} "
        f"downsampled_samples={result.downsampled_samples} buckets={result.written_buckets} "
        f"dropped_changes={result.dropped_changes}"
    )
    for number, done in result.sessions.items():
        typer.echo(f"session {number}: " + " ".join(f"{k}={v:g}" for k, v in done.items()))
    for refusal in result.refused:
        typer.secho(f"refused: {refusal}", err=True, fg="red")
    if result.refused:
        raise typer.Exit(1)


@app.command("export")
def export(
    out: Annotated[Path, out_path_opt("Dataset file to write: .parquet or .csv.", "--out")],
    metrics: Annotated[str, typer.Option(help="Comma-separated metric names (required).")],
    db: Db = None,
    start: Annotated[
        float | None, float_opt("Only samples at or after this time (s).", 0, MAX_TIME, "--from")
    ] = None,
    end: Annotated[
        float | None, float_opt("Only samples at or before this time (s).", 0, MAX_TIME, "--to")
    ] = None,
    nodes: Annotated[str, typer.Option(help="Comma-separated nodes (default: all).")] = "",
    step: Annotated[
        float | None,
        float_opt("Aggregate into buckets of this many seconds.", 0, MAX_TIME, open_lo=True),
    ] = None,
    agg: Annotated[str, typer.Option(help="Bucket aggregate: mean, max or last.")] = "mean",
    fmt: Annotated[
        str | None, typer.Option("--format", help="parquet or csv (default: from --out).")
    ] = None,
    session: Annotated[
        int | None, int_opt("The session to export (default: the newest).", 1, MAX_SESSION)
    ] = None,
) -> None:
    """Export samples of one session of the twin's history as a dataset (time, node,
    metric, value)."""
    names = split_list(metrics)
    if not names:
        raise typer.BadParameter("give at least one metric", param_hint="--metrics")
    if agg not in ("mean", "max", "last"):
        raise typer.BadParameter(f"must be mean, max or last, got {agg!r}", param_hint="--agg")
    if fmt is not None and fmt not in ("parquet", "csv"):
        raise typer.BadParameter(f"must be parquet or csv, got {fmt!r}", param_hint="--format")
    if fmt is not None and fmt != out.suffix.lstrip(".").lower():
        raise typer.BadParameter(
            f"--format {fmt} needs an --out file ending in .{fmt}", param_hint="--format"
        )
    if start is not None and end is not None and start > end:
        raise typer.BadParameter(f"--from {start:g} is after --to {end:g}")
    try:
        from twinsched.store.history import HistoryStore
        from twinsched.traces.twin_dataset import dataset_format, write_dataset
        from twinsched.twin.core.settings import TwinSettings
        from twinsched.twin.dataset import ExportSpec, export_frame

        dataset_format(out)
        settings = TwinSettings.from_env(db=db, dev=True)
        store = HistoryStore(settings.database_url())
        spec = ExportSpec(names, split_list(nodes), start, end, step, agg, session)  # type: ignore[arg-type]
        frame = export_frame(store, spec)
        write_dataset(frame, out)
    except (TwinschedError, ImportError) as exc:
        raise error_exit(exc) from exc
    series = frame.groupby(["metric", "node"]).ngroups if len(frame) else 0
    typer.echo(f"wrote {len(frame)} samples of {series} series to {out}")


app.command("whatif")(whatif)
app.command("collect")(collect)
app.command("snapshot")(snapshot)
