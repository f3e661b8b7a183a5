"""The predictive twin's quality on a long noisy VTE run with injected, labelled anomalies.

A replay of ``synthetic-continuum`` (energy curves on, a sample every ``--every`` seconds)
passes its per-node metrics through :class:`twinsched.sim.anomalies.AnomalyInjector` (2 %
meter noise on the watts, stuck / spike / slow episodes) into the long table the twin's
history exports (time, node, metric, value). The models of ``twin/predict`` train on the
first 70 % of the time range; the last 30 % is held out. Prints power MAPE per node type on
the held-out samples without anomalies, and the anomaly detector's precision, recall and F1
per sample on the held-out segment (a labelled sample is a positive).

    PYTHONPATH=src python bench/predict.py [--variant 5] [--every 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from twinsched.model.convert import scenario_to_document
from twinsched.model.energy import EnergySpec
from twinsched.model.state import ClusterState
from twinsched.scheduling.observers import BaseObserver, NodeMetrics
from twinsched.sim import run_replay
from twinsched.sim.anomalies import AnomalyInjector, AnomalySpec
from twinsched.traces import registry as traces
from twinsched.twin.predict.anomaly import fit_anomalies
from twinsched.twin.predict.features import node_types, wide
from twinsched.twin.predict.power import drawing, fit_power, mape_by_type


class Recorder(BaseObserver):
    """Keeps every sample as rows of the twin's long table."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        names = np.asarray(state.nodes.names)
        for metric, values in metrics.items():
            ok = np.isfinite(values)
            self.parts.append(pd.DataFrame({"time": now, "node": names[ok], "metric": metric,
                                            "value": np.asarray(values)[ok]}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="5")
    parser.add_argument("--every", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--rate", type=float, default=0.002)
    parser.add_argument("--contamination", type=float, default=0.01)
    args = parser.parse_args()
    scenario = traces.load("synthetic-continuum", args.variant)
    recorder = Recorder()
    injector = AnomalyInjector(recorder, AnomalySpec(args.noise, args.rate, 6, args.seed))
    t0 = time.perf_counter()
    run_replay(scenario, "bestfit", args.seed, sample_every_s=args.every, energy=EnergySpec(),
               observers=[injector])  # fmt: skip
    rows = wide(pd.concat(recorder.parts, ignore_index=True))
    labels = pd.DataFrame(injector.labels, columns=["time", "node", "kind"])
    cut = rows["time"].min() + 0.7 * (rows["time"].max() - rows["time"].min())
    train, test = rows[rows["time"] <= cut], rows[rows["time"] > cut]
    types = node_types(scenario_to_document(scenario))
    t1 = time.perf_counter()
    power = fit_power(train, types, args.seed)
    detector = fit_anomalies(power, train, args.contamination, args.seed)
    fit_s = time.perf_counter() - t1
    keyed = test.merge(labels.drop_duplicates(["time", "node"]), on=["time", "node"], how="left")
    clean = keyed[keyed["kind"].isna()]
    print(
        f"replay {t1 - t0:.1f} s; {len(rows)} samples ({len(train)} train, {len(test)} held "
        f"out), {len(labels)} labelled anomalous; fit {fit_s:.1f} s"
    )
    print("power MAPE per node type, held-out samples without anomalies:")
    for kind, mape in mape_by_type(power, clean).items():
        n = int((clean["node"].map(types) == kind).sum())
        print(f"  {kind:40s} {mape:6.2f} %  ({n} samples, {power.rows[kind]} trained)")
    scored = drawing(keyed)
    flagged = detector.flag(scored)
    hit = set(zip(flagged["time"], flagged["node"], strict=True))
    truth = scored["kind"].notna().to_numpy()
    pred = np.array([(t, n) in hit for t, n in zip(scored["time"], scored["node"], strict=True)])
    tp, fp, fn = int((truth & pred).sum()), int((~truth & pred).sum()), int((truth & ~pred).sum())
    precision, recall = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
    f1 = 2 * precision * recall / max(precision + recall, 1e-12)
    print(
        f"anomalies (held out, {len(scored)} samples, {int(truth.sum())} labelled): "
        f"precision {precision:.3f} recall {recall:.3f} F1 {f1:.3f}"
    )
    for kind in ("stuck", "spike", "slow"):
        at = (scored["kind"] == kind).to_numpy()
        print(f"  recall {kind:5s} {(pred & at).sum() / max(at.sum(), 1):.3f} ({at.sum()})")


if __name__ == "__main__":
    main()
