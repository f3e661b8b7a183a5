"""``twinsched scheduler serve|drive|run``: the scheduler service, a kube-scheduler-like
client, and the controller over the twin (``run --twin URL``).

Mount in the main command with ``app.add_typer(scheduler.app, name="scheduler")``. FastAPI,
uvicorn and httpx are imported inside the commands (start-up stays light).
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from twinsched.cli.console import error_exit
from twinsched.cli.options import (
    DataOpt,
    DbOpt,
    ScenarioOpt,
    float_opt,
    int_opt,
    load_source,
    scenario_source,
    scheduler_opt,
)
from twinsched.cli.security import (
    RequireReadOpt,
    SslCaOpt,
    SslCertOpt,
    SslKeyOpt,
    TokensDbOpt,
    tls_kwargs,
    verifier,
)
from twinsched.cli.servers import quiet_gc
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.serve.cluster import ServiceCluster
    from twinsched.serve.source import StateSource

app = typer.Typer(
    help="The scheduler service (Kubernetes extender protocol) and a client that drives it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

TOKEN_ENV = "TWINSCHED_SCHEDULER_TOKEN"
Token = Annotated[
    str | None, typer.Option(help=f"Bearer token for bind and updates (default: ${TOKEN_ENV}).")
]
GpuResource = Annotated[str, typer.Option(help="Extended resource of whole GPUs.")]
ShareResource = Annotated[
    str, typer.Option(help="Resource or pod annotation of a GPU share, in milli-GPU.")
]
ModelLabel = Annotated[str, typer.Option(help="Node label holding the GPU model.")]
TWIN_REFRESH = "Seconds between two checks of the twin's version (0: every filter call)."


TwinOpt = Annotated[
    str | None,
    typer.Option(
        help="Read nodes and running pods from the twin service at this URL and write "
        "binds to it (its write token comes from $TWINSCHED_TWIN_TOKEN); instead of "
        "--nodes and --state."
    ),
]
NodesFromCallsOpt = Annotated[
    bool,
    typer.Option(
        "--nodes-from-calls",
        help="Also take the nodes from the node objects of filter calls (nodeCacheCapable "
        "false, nothing posting /nodes): anyone reaching the service can change them.",
    ),
]


class Prioritize(StrEnum):
    """What ``POST /prioritize`` answers (``serve/ranking.py``)."""

    ranking = "ranking"
    chosen = "chosen"


PrioritizeOpt = Annotated[
    Prioritize,
    typer.Option(
        help="What prioritize answers: 'ranking' scores every candidate the scheduler can "
        "place the pod on (the chosen node 10, the others 0-9 by its own scores), 'chosen' "
        "the chosen node only (10)",
    ),
]
InsecureLocalOpt = Annotated[
    bool,
    typer.Option(
        "--insecure-local",
        help="Allow no or a weak token; only with a loopback --host (a test bench).",
    ),
]


@app.command()
def serve(
    scheduler: Annotated[
        str, scheduler_opt("Registered scheduler (twinsched schedulers).")
    ] = "fgd",
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, int_opt("Port to bind.", 1, 65535)] = 8282,
    seed: Annotated[int, typer.Option(help="Seed of the tie-break order.")] = 0,
    workload_trace: Annotated[
        str, typer.Option(help="Trace whose pods are the typical workload (FGD profiles it).")
    ] = "alibaba-gpu-2023",
    workload_variant: Annotated[str, typer.Option(help="Variant of --workload-trace.")] = "default",
    data: DataOpt = None,
    db: DbOpt = None,
    nodes: Annotated[Path | None, typer.Option(help="Start with this v1.NodeList (JSON).")] = None,
    state: Annotated[
        Path | None, typer.Option(help="Journal of nodes, pods and binds: replayed at start.")
    ] = None,
    twin: TwinOpt = None,
    twin_refresh: Annotated[float, float_opt(TWIN_REFRESH, 0, 3600)] = 0.5,
    token: Token = None,
    gpu_resource: GpuResource = "nvidia.com/gpu",
    gpu_share_resource: ShareResource = "twinsched.io/gpu-milli",
    gpu_model_label: ModelLabel = "nvidia.com/gpu.product",
    ssl_certfile: SslCertOpt = None,
    ssl_keyfile: SslKeyOpt = None,
    ssl_ca_certs: SslCaOpt = None,
    require_read_token: RequireReadOpt = False,
    tokens_db: TokensDbOpt = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    nodes_from_calls: NodesFromCallsOpt = False,
    insecure_local: InsecureLocalOpt = False,
    prioritize: PrioritizeOpt = Prioritize.ranking,
) -> None:
    """Serve a scheduler behind the extender protocol: POST /filter, /prioritize, /bind.

    Needs a strong token (--token or $TWINSCHED_SCHEDULER_TOKEN, 16 characters or more),
    mutual TLS (--ssl-ca-certs) or --insecure-local on a loopback address."""
    token = token or os.environ.get(TOKEN_ENV, "")
    try:
        _check_auth(token, host, insecure_local, mtls=ssl_ca_certs is not None)
        tls = tls_kwargs(ssl_certfile, ssl_keyfile, ssl_ca_certs)
        import uvicorn

        from twinsched.serve.app import create_app
        from twinsched.serve.convert import Names

        names = Names(gpu_resource=gpu_resource, gpu_share_resource=gpu_share_resource,
                      gpu_model_label=gpu_model_label)  # fmt: skip
        if twin is not None and (nodes is not None or state is not None):
            raise TwinschedError("--twin is the state: give it without --nodes and --state")
        workload = load_source(*scenario_source(workload_trace, workload_variant, data, None,
                                                db)).pods  # fmt: skip
        cluster = _cluster(scheduler, seed, workload, state, twin, twin_refresh)
        if nodes is not None:
            from twinsched.serve.convert import node_list_rows

            cluster.set_nodes(node_list_rows(nodes.read_bytes(), names, f"--nodes {nodes}"))
        application = create_app(cluster, names, token, nodes_from_calls=nodes_from_calls,
                                 ranking=prioritize is Prioritize.ranking,
                                 verifier=verifier([token], tokens_db),
                                 read_required=require_read_token)  # fmt: skip
    except (TwinschedError, ImportError, OSError, ValueError) as exc:
        raise error_exit(exc) from exc
    quiet_gc()  # (the state is built: frozen, never scanned again)
    uvicorn.run(application, host=host, port=port, log_level=log_level, access_log=False, **tls)


def _cluster(
    scheduler: str, seed: int, workload: Any, state: Path | None, twin: str | None,
    refresh: float,
) -> ServiceCluster:  # fmt: skip
    """The service's cluster: its journal (``--state``) or the twin as its state source."""
    from twinsched.serve.cluster import ServiceCluster
    from twinsched.serve.journal import Journal

    journal = Journal(state) if state is not None else None
    source = _twin_source(twin, refresh, scheduler) if twin is not None else None
    return ServiceCluster(scheduler, seed=seed, workload=workload, journal=journal, source=source)


def _check_auth(token: str, host: str, insecure_local: bool, mtls: bool) -> None:
    """Refuse to serve writes (bind, /nodes, /pods) that anyone could call: a token must
    be strong (the twin's rule), unless client certificates are required (mutual TLS: no
    token at all is fine then) or ``--insecure-local`` on a loopback address."""
    import ipaddress

    from twinsched.twin.core.settings import token_problem

    if insecure_local:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise TwinschedError(f"--insecure-local serves a loopback --host only, got {host!r}")
        return
    problem = token_problem(token)
    if problem is not None and not (mtls and not token):
        raise TwinschedError(
            f"the token {problem}: give --token or ${TOKEN_ENV} (16 characters or more), "
            "--ssl-ca-certs (mutual TLS), or --insecure-local on a loopback --host"
        )


def _twin_source(url: str, max_age: float, scheduler: str) -> StateSource:
    from twinsched.serve.twin_source import TwinSource
    from twinsched.twin.client import TwinClient

    client = TwinClient(url, os.environ.get("TWINSCHED_TWIN_TOKEN"))
    return TwinSource(client, max_age=max_age, scheduler=scheduler)


@app.command()
def drive(
    url: Annotated[str, typer.Option(help="The service's URL, e.g. http://127.0.0.1:8282.")],
    trace: Annotated[
        str, typer.Option(help="Trace to replay (twinsched traces).")
    ] = "alibaba-gpu-2023",
    variant: Annotated[str, typer.Option(help="Trace variant.")] = "default",
    data: DataOpt = None,
    scenario: ScenarioOpt = None,
    db: DbOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the fill-up arrival order.")] = 0,
    cache_capable: Annotated[
        bool, typer.Option("--node-names/--full-nodes", help="nodeCacheCapable: names only.")
    ] = True,
    limit: Annotated[int, typer.Option(help="Drive only the first N pods (0: all).")] = 0,
    check: Annotated[
        str | None, scheduler_opt("Compare with this scheduler's in-process fill-up.")
    ] = None,
    token: Token = None,
) -> None:
    """Replay a trace's fill-up through a running service, pod by pod, like kube-scheduler.

    The objects use the default resource and label names (those of a plain `serve`)."""
    import statistics

    try:
        import httpx

        from twinsched.serve import driver
        from twinsched.serve.convert import Names
    except ImportError as exc:
        raise error_exit(exc) from exc
    try:
        chosen = load_source(*scenario_source(trace, variant, data, scenario, db))
        nodes, pods = driver.fillup_objects(chosen, seed, Names())
        pods = pods[:limit] if limit else pods
        with httpx.Client(base_url=url, timeout=30.0) as client:
            result = driver.drive(client, nodes, pods, cache_capable=cache_capable,
                                  token=token or os.environ.get(TOKEN_ENV, ""))  # fmt: skip
    except (TwinschedError, OSError, httpx.HTTPError) as exc:
        raise error_exit(exc) from exc
    placed = sum(p is not None for p in result.placements)
    ms = sorted(1000 * s for s in result.filter_prioritize_s)
    p99 = ms[min(len(ms) - 1, int(0.99 * len(ms)))] if ms else 0.0
    typer.echo(f"{len(pods)} pods driven, {placed} bound, {len(result.errors)} errors; "
               f"filter+prioritize p50 {statistics.median(ms) if ms else 0:.2f} ms, "
               f"p99 {p99:.2f} ms")  # fmt: skip
    if check is not None:
        expected = driver.placements_of(driver.fillup_placements(chosen, check, seed))
        expected = expected[: len(pods)]
        diff = [
            i for i, (a, b) in enumerate(zip(result.placements, expected, strict=True)) if a != b
        ]
        where = f" (first differs at pod {diff[0]})" if diff else ""
        typer.echo(f"same placements as the in-process fill-up of {check}: "
                   f"{len(pods) - len(diff)}/{len(pods)}{where}")  # fmt: skip
        if diff:
            raise typer.Exit(1)


@app.command("run")
def run_controller(
    twin: Annotated[str, typer.Option(help="The twin's URL (write token: $TWINSCHED_TWIN_TOKEN).")],
    scheduler: Annotated[
        str, scheduler_opt("Registered scheduler, composite, ensemble, bandit or ai: model.")
    ] = "fgd",
    session: Annotated[
        int | None, int_opt("The twin session to schedule (default: the live one).", 1, 2**31 - 1)
    ] = None,
    batch: Annotated[int, int_opt("Binds written per PATCH batch at most.", 1, 100_000)] = 500,
    wait: Annotated[float, float_opt("Seconds a changes request waits for one.", 0, 30)] = 0.5,
    lease_ttl: Annotated[float, float_opt("Seconds the session's lease lasts.", 1, 300)] = 10.0,
    holder: Annotated[
        str, typer.Option(help="Name of this controller (default: host-pid-random).")
    ] = "",
    seed: Annotated[int, typer.Option(help="Seed of the tie-break order.")] = 0,
    host: Annotated[str, typer.Option(help="Address of /healthz and /metrics.")] = "127.0.0.1",
    port: Annotated[
        int, int_opt("Port of /healthz and /metrics (0: any free one).", 0, 65535)
    ] = 8383,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Exit once no pending pod can be bound.")
    ] = False,
) -> None:
    """Schedule the twin's pending pods: follow its changes, decide with SCHEDULER, write binds.

    One controller per session (a lease at the twin); a restarted one resumes from the twin."""
    try:
        from twinsched.scheduling import registry
        from twinsched.twin.controller.main import run_forever
        from twinsched.twin.controller.run import Settings

        registry.create(scheduler)  # a name that parses but cannot be built fails here
        settings = Settings(scheduler=scheduler, session=session, batch=batch, wait_s=wait,
                            lease_ttl_s=lease_ttl, seed=seed, holder=holder)  # fmt: skip
        run_forever(twin, os.environ.get("TWINSCHED_TWIN_TOKEN"), settings, host, port,
                    until_idle=until_idle, echo=typer.echo)  # fmt: skip
    except (TwinschedError, ImportError, OSError) as exc:
        raise error_exit(exc) from exc
