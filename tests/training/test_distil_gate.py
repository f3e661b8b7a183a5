"""The mix gate of a distilled reranker, fitted from validation gains."""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import F64
from twinsched.scheduling.ai.ties import CONTEXT_SCALE
from twinsched.training.distil.gate import fit_gate, gated_gains


def _mix(cpu: float, share: float = 0.4, multi: float = 0.01, constrained: float = 0.0) -> F64:
    mix: F64 = np.array([cpu, share, multi, constrained]) / CONTEXT_SCALE
    return mix


MIXES = {
    "cpu0": _mix(0.0), "cpu100": _mix(0.1), "cpu200": _mix(0.2), "cpu250": _mix(0.25),
    "cpu300": _mix(0.3), "spec10": _mix(0.13, constrained=0.09),
    "spec25": _mix(0.13, constrained=0.22), "share80": _mix(0.13, share=0.77),
}  # fmt: skip


def test_bounds_fall_halfway_between_the_last_variant_that_gained_and_the_first_that_did_not() -> (
    None
):
    gains = {"cpu0": 0.6, "cpu100": 0.6, "cpu200": 0.7, "cpu250": -0.25, "cpu300": -0.1,
             "spec10": 0.3, "spec25": -0.2, "share80": 0.5}  # fmt: skip
    gate = dict(fit_gate(gains, MIXES, min_gain=0.1))
    assert gate == {"cpu_pods": 0.225, "model_constrained_pods": 0.155}
    gated = gated_gains(gains, MIXES, tuple(gate.items()))
    assert gated["cpu250"] == gated["cpu300"] == gated["spec25"] == 0.0
    assert gated["cpu200"] == 0.7 and gated["share80"] == 0.5


def test_a_variant_below_the_minimum_gain_counts_as_not_gaining() -> None:
    gains = {"cpu0": 0.6, "cpu100": 0.6, "cpu200": 0.05, "cpu250": 0.4, "cpu300": 0.5,
             "spec10": 0.3, "spec25": 0.3, "share80": 0.5}  # fmt: skip
    assert fit_gate(gains, MIXES, min_gain=0.1) == ()  # cpu200 lies between gaining ones
    # at 0.35 the model-constrained variants do not count either: only they lie beyond
    # every gaining variant, on the one feature where they differ
    assert fit_gate(gains, MIXES, min_gain=0.35) == (("model_constrained_pods", 0.045),)


def test_everywhere_or_nowhere_gaining_fits_no_gate() -> None:
    assert fit_gate(dict.fromkeys(MIXES, 0.5), MIXES, 0.1) == ()
    assert fit_gate(dict.fromkeys(MIXES, -0.5), MIXES, 0.1) == ()
