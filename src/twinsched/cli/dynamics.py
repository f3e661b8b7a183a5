"""The options of a replay's dynamics: node and link faults, migration, energy and carbon.

Parsed like every option (``cli/options.py``): a fault or energy file is read and validated
before any run starts, and a bad key is one ``BadParameter`` naming the file, the key and
the accepted range. ``docs/faults.md`` and ``docs/energy.md`` describe the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from twinsched.cli.options import float_opt

if TYPE_CHECKING:
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec

FAULT_RATE_MAX = 100.0  # node failures per node per day (model/faults.py)
MTTR_RANGE = (1.0, 1e7)  # seconds


def parse_faults_file(raw: object) -> Any:
    """A :class:`~twinsched.model.faults.FaultSpec` from a TOML file; a bad file or value is
    one ``BadParameter`` naming the file, the key and the accepted range."""
    from twinsched.model.faults import FaultSpec

    return parse_toml_model(raw, FaultSpec, "'--faults'")


def parse_energy_file(raw: object) -> Any:
    """An :class:`~twinsched.model.energy.EnergySpec` from a TOML file (as the faults)."""
    from twinsched.model.energy import EnergySpec

    return parse_toml_model(raw, EnergySpec, "'--energy'")


def parse_toml_model(raw: object, model: Any, hint: str) -> Any:
    """The pydantic ``model`` validated from the TOML file at ``raw``; a bad file or value
    is one ``BadParameter`` naming the file, the key and the accepted range."""
    import tomllib

    from pydantic import ValidationError

    path = Path(str(raw))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise typer.BadParameter(f"{path}: {exc.strerror or exc}", param_hint=hint) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"{path}: not a TOML file: {exc}", param_hint=hint) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise typer.BadParameter(f"{path}: {key}: {first['msg']}", param_hint=hint) from None


def energy_file_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of an energy spec file, read with :func:`parse_energy_file`."""
    rule = "TOML file: cpu_curve, gpu_curve, gpu_power_w, power_off_after_s, ... (docs/energy.md)"
    return typer.Option(*decls, help=f"{help} [{rule}]", metavar="FILE")


def parse_descheduler(text: str) -> str:
    """A descheduler name with its parameters (``defrag/threshold=30``), checked by creating
    it: an unknown name or a parameter out of range is a ``BadParameter`` naming it."""
    from twinsched.errors import TwinschedError
    from twinsched.scheduling.descheduling import create

    try:
        create(text)
    except TwinschedError as exc:
        raise typer.BadParameter(str(exc)) from None
    return text


def descheduler_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of an optional descheduler, checked by :func:`parse_descheduler`."""

    def check(text: str | None) -> str | None:
        return None if text is None else parse_descheduler(text)

    rule = "defrag, rebalance-after-recovery; /moves=N/every=S/restart=S (docs/faults.md)"
    return typer.Option(*decls, help=f"{help} [{rule}]", callback=check, metavar="NAME")


def faults_file_opt(help: str, *decls: str) -> Any:
    """``typer.Option`` of a fault spec file: the command reads it with
    :func:`parse_faults_file` before any work (so a documented command parses without it)."""
    rule = (
        "TOML file: rate_per_day, mttr_s, pools, faults, outages, deadline_slack, "
        "link_rate_per_day, link_mttr_s, links (docs/faults.md)"
    )
    return typer.Option(*decls, help=f"{help} [{rule}]", metavar="FILE")


FaultRateOpt = Annotated[
    float | None,
    float_opt("node failures per node per day, replay only (0: none)", 0, FAULT_RATE_MAX),
]
MttrOpt = Annotated[
    float | None, float_opt("mean time to repair a failed node, seconds", *MTTR_RANGE)
]
FaultsOpt = Annotated[
    Path | None, faults_file_opt("node failures per nodepool and explicit faults, replay only")
]
EnergyOpt = Annotated[
    Path | None, energy_file_opt("power curves, power-off, deferral; replay only")
]
CarbonOpt = Annotated[
    Path | None,
    typer.Option(
        help="carbon intensity per nodepool, replay only (default: the seed's synthetic "
        "profile) [CSV file: time_s,pool,g_per_kwh (docs/energy.md)]",
        metavar="FILE",
    ),
]
DeferOpt = Annotated[
    float | None,
    float_opt("low-priority jobs may wait this long for greener hours, s (replay)", 0, 1e7),
]
PowerOffOpt = Annotated[
    float | None, float_opt("power off nodes left empty this long, s (replay)", 1, 1e7)
]
DeschedulerOpt = Annotated[
    str | None, descheduler_opt("move running pods at a cost (migration), replay only")
]


def fault_spec_of(
    spec: FaultSpec | None, rate_per_day: float | None, mttr_s: float | None
) -> FaultSpec | None:
    """The run's faults: the ``--faults`` file, its top-level rates replaced by
    ``--fault-rate`` and ``--mttr`` when given; None when nothing can fail."""
    if spec is None and rate_per_day is None:  # nothing can fail: no pydantic model to build
        return None
    from twinsched.model.faults import FaultSpec

    base = spec if spec is not None else FaultSpec()
    changes = {"rate_per_day": rate_per_day, "mttr_s": mttr_s}
    chosen = base.model_copy(update={k: v for k, v in changes.items() if v is not None})
    return chosen if chosen.enabled else None


def energy_spec_of(
    path: Path | None, carbon: Path | None, defer_s: float | None, power_off_s: float | None
) -> EnergySpec | None:
    """The run's energy accounting: the ``--energy`` file (else the defaults) with
    ``--defer`` and ``--power-off`` replacing its values; None when no option asks for it."""
    if path is None and carbon is None and defer_s is None and power_off_s is None:
        return None
    from twinsched.model.energy import EnergySpec

    base = parse_energy_file(path) if path is not None else EnergySpec()
    changes = {"defer_max_s": defer_s, "power_off_after_s": power_off_s}
    spec: EnergySpec = base.model_copy(update={k: v for k, v in changes.items() if v is not None})
    return spec


DEMO_FAULT_RATE = 0.5  # node failures per node per day
DEMO_MTTR_S = 1800.0
DEMO_OUTAGE = ("edge", 10 * 3600.0, 2 * 3600.0)  # nodepool, from (s), for (s)


def demo_dynamics() -> tuple[FaultSpec, EnergySpec]:
    """The demo's dynamics: each node fails about every other day and is repaired in half
    an hour on average, the edge nodepool is out from 10:00 to 12:00 of the trace, and
    energy is metered with the default power curves and the seed's synthetic carbon profile."""
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec, PoolOutage

    pool, down_s, for_s = DEMO_OUTAGE
    outage = PoolOutage(pool=pool, down_s=down_s, for_s=for_s)
    faults = FaultSpec(rate_per_day=DEMO_FAULT_RATE, mttr_s=DEMO_MTTR_S, outages=(outage,))
    return faults, EnergySpec()
