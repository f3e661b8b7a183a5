"""Where a distilled reranker is used at all: a gate on the workload mix, from validation.

A reranker learns from 18 training mixes; where the validation runs (the training variants
at fill-up orders the teacher never saw) say it does not gain, it should not be trusted on
mixes beyond them either. The gate is one upper bound per workload-mix feature
(:data:`~twinsched.scheduling.ai.ties.CONTEXT_NAMES`, as fractions of the pods): for a
feature on which some variants that did not gain ``min_gain`` lie beyond every variant that
did, the bound is halfway between the last variant that gained and the first that did not.
Beyond a bound the reranker places exactly as FGD. Pure functions of their inputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from twinsched.model.cluster import F64
from twinsched.scheduling.ai.rerank import Shortlist
from twinsched.scheduling.ai.ties import CONTEXT_NAMES, CONTEXT_SCALE

Gate = tuple[tuple[str, float], ...]


def fit_gate(gains: Mapping[str, float], mixes: Mapping[str, F64], min_gain: float) -> Gate:
    """Upper bounds on the mix (see the module) from each variant's mean validation gain and
    its :func:`~twinsched.scheduling.ai.ties.workload_context`."""
    good = [v for v, g in gains.items() if g >= min_gain]
    bad = [v for v in gains if v not in good]
    if not good or not bad:
        return ()
    bounds = []
    for i, name in enumerate(CONTEXT_NAMES):
        top = max(float(mixes[v][i]) for v in good)
        beyond = [float(mixes[v][i]) for v in bad if float(mixes[v][i]) > top]
        if beyond:
            bounds.append((name, round(CONTEXT_SCALE * (top + min(beyond)) / 2, 6)))
    return tuple(bounds)


def gated_gains(
    gains: Mapping[str, float], mixes: Mapping[str, F64], gate: Gate
) -> dict[str, float]:
    """Each variant's gain with the gate: its own where the gate opens, 0 (FGD) elsewhere."""
    check = Shortlist(gate=gate)
    return {v: (g if check.opens_on(mixes[v]) else 0.0) for v, g in gains.items()}
