"""``twinsched run --twin URL --mode replay --anomalies RATE --noise STD``: labelled anomalies
and meter noise in the node metrics a run publishes to a twin (``sim/anomalies.py``), with
one ``time,node,kind`` CSV per run in ``--anomaly-labels`` to score ``/anomalies`` against.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from twinsched.cli.options import float_opt, int_opt, out_dir_opt

if TYPE_CHECKING:
    from twinsched.model.run import RunResult, RunSpec
    from twinsched.sim.anomalies import AnomalySpec

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


def anomaly_spec(
    rate: float | None, noise: float | None, length: int, twin: str | None, mode: str
) -> AnomalySpec | None:
    """The anomalies ``--anomalies`` and ``--noise`` ask for (the one not given is 0), or
    None; they go to the runs in their :class:`~twinsched.experiments.runner.TwinLink`."""
    if rate is None and noise is None:
        return None
    if twin is None or mode != "replay":
        raise typer.BadParameter("--anomalies and --noise need --twin and --mode replay")
    from twinsched.sim.anomalies import AnomalySpec

    return AnomalySpec(noise=noise or 0.0, rate=rate or 0.0, length=length)


def write_run_labels(specs: Sequence[RunSpec], runs: Sequence[RunResult], folder: Path) -> None:
    """Each run's injected anomalies as ``folder/NAME_seedN.csv`` (``time,node,kind``)."""
    from twinsched.experiments.runner import label_file
    from twinsched.sim.anomalies import write_labels

    for spec, result in zip(specs, runs, strict=True):
        write_labels(folder / label_file(spec), result.anomaly_labels)
    typer.echo(f"anomaly labels: {folder}/ (time,node,kind per run)", err=True)
