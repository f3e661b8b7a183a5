"""``twinsched run --twin URL --mode replay --anomalies RATE --noise STD``: labelled anomalies
and meter noise in the node metrics a run publishes to a twin (``sim/anomalies.py``), with
one ``time,node,kind`` CSV per run in ``--anomaly-labels`` to score ``/anomalies`` against.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from twinsched.cli.options import float_opt, int_opt, out_dir_opt, scoped_env

AnomaliesOpt = Annotated[
    float | None,
    float_opt(
        "with --twin and --mode replay: chance per node and sample that an anomaly starts", 0, 1
    ),
]
NoiseOpt = Annotated[
    float | None,
    float_opt("with --twin and --mode replay: relative noise (std) on each node's watts", 0, 0.5),
]
AnomalyLengthOpt = Annotated[int, int_opt("samples per injected anomaly", 1, 10_000)]
LabelsOpt = Annotated[
    Path, out_dir_opt("folder of the injected anomalies' labels, a CSV per run (NAME_seedN.csv)")
]


@contextmanager
def injected_anomalies(
    rate: float | None, noise: float | None, length: int, labels: Path,
    twin: str | None, mode: str,
) -> Iterator[None]:  # fmt: skip
    """``$TWINSCHED_TWIN_ANOMALIES`` set for the runs (worker processes inherit it) when
    ``--anomalies`` or ``--noise`` is given (the one not given is 0): like the broker, not
    part of the recorded spec, since the run's results do not change."""
    if rate is None and noise is None:
        yield
        return
    if twin is None or mode != "replay":
        raise typer.BadParameter("--anomalies and --noise need --twin and --mode replay")
    from twinsched.sim.anomalies import ANOMALIES_ENV, AnomalySpec

    spec = AnomalySpec(noise=noise or 0.0, rate=rate or 0.0, length=length)
    with scoped_env(ANOMALIES_ENV, spec.to_json(labels.absolute())):
        yield
    typer.echo(f"anomaly labels: {labels}/ (time,node,kind per run)", err=True)
