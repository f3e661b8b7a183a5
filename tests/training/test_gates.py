"""Tie gates: the fit from a grid of gains, the rule, and the grid and training end to end."""

from __future__ import annotations

import csv
import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.ray_cluster import RayCluster
from twinsched.errors import TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.features import POD_KINDS
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.policy import random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.ties import (
    CONTEXT_NAMES,
    Condition,
    Gate,
    TieGates,
    TieRule,
    ties_of,
)
from twinsched.sim import run_fillup
from twinsched.traces import registry as traces
from twinsched.training.gates import (
    GateGrid,
    conditions,
    fit,
    leave_one_out,
    load,
    measure,
    save,
    thresholds,
)
from twinsched.training.recipe import train
from twinsched.training.specs import ClonePhase, DataSpec, EsPhase, GatePhase, Recipe

FGD = {"fgd_score": 100.0}
CPU, SHARE, ONE, MULTI = range(len(POD_KINDS))
CONSTRAINED = CONTEXT_NAMES.index("model_constrained_pods")


@functools.cache
def _load(variant: str) -> Scenario:
    return traces.load("synthetic-continuum", variant)


def _grid(gains_by_kind: dict[int, list[float]], spread: float = 0.01) -> GateGrid:
    """Six variants along the GPU-model-constrained share (0 to 1.25), widths 2 and 4, four
    seeds whose gains are the given mean +- ``spread`` (width 4: half the gain)."""
    context = np.zeros((6, len(CONTEXT_NAMES)))
    context[:, CONSTRAINED] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]
    gains = np.zeros((len(POD_KINDS), 6, 2, 4))
    noise = np.array([-1.0, 1.0, -1.0, 1.0]) * spread
    for kind, means in gains_by_kind.items():
        mean = np.asarray(means)[:, None, None]
        gains[kind] = mean * np.array([1.0, 0.5])[None, :, None] + noise
    return GateGrid(tuple("abcdef"), context, (2.0, 4.0), gains)


def test_thresholds_cut_between_distinct_values_and_below_all() -> None:
    assert thresholds(np.array([0.5, 0.0, 0.5, 1.0])).tolist() == [-1.0, 0.25, 0.75]


def test_a_gate_opens_where_the_mix_is_like_the_variants_that_gained() -> None:
    """One-GPU pods gain on the three most constrained mixes and lose elsewhere: one gate,
    above the midpoint between the last loser and the first winner, at the better width."""
    grid = _grid({ONE: [-0.2, -0.1, 0.0, 0.5, 0.8, 1.6], CPU: [0.1, -0.1, 0.1, -0.1, 0.1, -0.1]})
    rule = fit(grid)
    assert rule.gates == (
        Gate("one_gpu", 2.0, (Condition("model_constrained_pods", True, 0.625),)),
    )
    closed, opened = np.zeros(len(CONTEXT_NAMES)), np.zeros(len(CONTEXT_NAMES))
    opened[CONSTRAINED] = 0.7
    assert rule.widths(closed).tolist() == [1.0] * len(POD_KINDS)
    assert rule.widths(opened).tolist() == [1.0, 1.0, 2.0, 1.0]


def test_no_gate_where_nothing_gains_beyond_noise() -> None:
    """Gains of +0.05 with a seed spread of 0.2 are not gains at one standard error; a lone
    winning variant is not enough either (two by default): FGD's ties everywhere."""
    assert fit(_grid({SHARE: [0.05] * 6}, spread=0.2)).gates == ()
    lone = _grid({MULTI: [0.0, 0.0, 0.0, 0.0, 0.0, 2.0]})
    assert fit(lone).gates == ()
    assert fit(lone, min_variants=1).gates[0].kind == "multi_gpu"
    assert fit(_grid({SHARE: [0.05] * 6}, spread=0.2), z=0.0).gates[0].when[0].threshold < 0


def test_two_conditions_box_in_the_variants_that_gained_and_leave_one_out_tells() -> None:
    """Share pods gain in the middle of the range only: one condition cannot open there
    without a loser, two can. Leaving one variant out at a time shows what that costs."""
    middle = {SHARE: [-0.3, 0.3, 0.4, 0.5, 0.3, -0.3]}
    assert fit(_grid(middle)).gates == ()
    (gate,) = fit(_grid(middle), depth=2).gates
    assert [c.describe() for c in gate.when] == [
        "model_constrained_pods >= 0.031",
        "model_constrained_pods <= 0.281",
    ]
    # Left out, an end variant lies outside the others' range: their gate reaches it (the
    # cut sits past the last variant seen) and it loses; the middle ones gain.
    loo = leave_one_out(_grid(middle), depth=2)
    assert loo == pytest.approx([-0.3, 0.3, 0.4, 0.5, 0.3, -0.3])
    assert leave_one_out(_grid(middle)) == pytest.approx([-0.3, 0, 0, 0, 0, -0.3])  # depth 1
    found, masks = conditions(_grid(middle).context)
    assert len(found) == len({m.tobytes() for m in masks}) == masks.shape[0]


def test_gates_round_trip_through_meta_and_refuse_bad_input() -> None:
    cpu_heavy = Gate("cpu", 3.0, (Condition("cpu_pods", True, 1.0),))
    cpu_light = Gate("cpu", 2.0, (Condition("cpu_pods", False, 0.1),))
    rule = TieGates((cpu_heavy, cpu_light))
    again = ties_of(rule.to_meta())
    assert again == rule
    context = np.zeros(len(CONTEXT_NAMES))
    assert again.widths(context)[CPU] == 2.0  # only the second gate is open
    context[0] = 1.2
    assert again.widths(context)[CPU] == 3.0
    assert cpu_heavy.describe() == "cpu pods: width 3 where cpu_pods >= 0.250"
    assert rule.describe()[-1] == "share, one_gpu, multi_gpu pods: width 1 always"
    first_format = {"kind": "cpu", "feature": "cpu_pods", "above": True, "threshold": 1.0}
    assert ties_of({"gates": [{**first_format, "width": 3.0}]}) == TieGates((cpu_heavy,))
    assert isinstance(ties_of(2.0), TieRule)
    with pytest.raises(TwinschedError, match="kind one of"):
        Gate("gpu", 2.0)
    with pytest.raises(TwinschedError, match="feature one of"):
        Condition("gpus", True, 1.0)
    with pytest.raises(TwinschedError, match="cannot read"):
        ties_of({"gates": [{"kind": "cpu"}]})
    with pytest.raises(TwinschedError, match="not both"):
        Recipe(es=EsPhase(generations=1), gates=GatePhase(seeds=(0,)))
    with pytest.raises(TwinschedError, match="must be > 1"):
        measure(random_policy((4,), prior=FGD), "synthetic-continuum", ("1",), (1.0,), (0,))


def test_closed_gates_place_exactly_as_fgd_and_open_ones_do_not() -> None:
    scenario = _load("2")
    policy = random_policy((4,), prior=FGD)
    shut = TieGates((Gate("share", 4.0, (Condition("cpu_pods", True, 99.0),)),))
    wide = TieGates((Gate("share", 64.0),))  # no condition: always open
    fgd = run_fillup(scenario, "fgd", 3)
    gated = run_fillup(scenario, PolicyScheduler("g", policy, shut), 3)
    assert gated.curve == fgd.curve and gated.summary == fgd.summary
    opened = run_fillup(scenario, PolicyScheduler("g", policy, wide), 3)
    assert opened.curve != fgd.curve


def test_grid_is_paired_with_fgd_and_independent_of_workers() -> None:
    policy = random_policy((4,), prior=FGD)
    seen: list[tuple[int, int]] = []
    one = measure(policy, "synthetic-continuum", ("1", "2"), (2.0, 8.0), (0, 1), workers=1,
                  progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    two = measure(policy, "synthetic-continuum", ("1", "2"), (2.0, 8.0), (0, 1), workers=2)
    assert one.gains.shape == (len(POD_KINDS), 2, 2, 2)
    assert np.array_equal(one.gains, two.gains)
    assert seen[-1][0] == seen[-1][1]
    assert np.abs(one.gains).max() > 0  # widening ties moved something


def test_grid_on_ray_is_the_grid_in_this_process(ray_cluster: RayCluster) -> None:
    from twinsched.experiments.ray_executor import RayExecutor

    policy = random_policy((4,), prior=FGD)
    ray = RayExecutor(ray_cluster.address)
    grid = ("synthetic-continuum", ("1", "2"), (4.0,), (0,))
    on_ray = measure(policy, *grid, executor=ray)
    here = measure(policy, *grid, workers=1)
    assert sum(ray.tasks_per_node.values()) > 2  # FGD's runs and the widened ones
    assert np.array_equal(on_ray.gains, here.gains) and np.array_equal(on_ray.context, here.context)
    assert np.abs(here.gains).max() > 0


def test_training_with_gates_keeps_the_better_of_gates_and_fgd(tmp_path: Path) -> None:
    spec = Recipe(
        DataSpec("synthetic-continuum", ("1", "2"), ("3",), val_seeds=(5, 6)),
        ClonePhase(epochs=0, candidates=8, prior=(("fgd_score", 100.0),)),
        gates=GatePhase(seeds=(0, 1), widths=(2.0, 8.0), z=0.0, min_variants=1),
        workers=1,
    )  # fmt: skip
    said: list[str] = []
    result = train(spec, _load, tmp_path, log=said.append)
    assert any(line.startswith("tie gates: validation") for line in said)
    with (tmp_path / "gate_grid.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(POD_KINDS) * 2 * 2
    grid = load(tmp_path / "gate_grid.npz")
    assert grid.variants == ("1", "2") and grid.gains.shape == (len(POD_KINDS), 2, 2, 2)
    save(grid, tmp_path / "again.npz")
    assert np.array_equal(load(tmp_path / "again.npz").gains, grid.gains)
    with pytest.raises(TwinschedError, match="not a gate grid"):
        load(tmp_path / "gate_grid.csv")
    stored = ties_of(result.policy.meta["resolution"])
    assert isinstance(stored, TieGates)  # FGD's ties (no gate) or the fitted gates
    assert result.metrics["val_alloc_pct"] == result.curves[-1]["val_alloc_pct"]
    ModelRegistry(tmp_path / "models").register(
        "gated", "twinsched.policy", result.policy.save, {}, result.data_checksum, result.metrics
    )
    served = PolicyScheduler("x", result.policy)
    assert served.ties == stored


def test_train_command_fits_gates_registers_them_and_refuses_bad_options(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from twinsched.cli import app

    models, out = tmp_path / "models", tmp_path / "out"
    common = (
        "[data]\ntrace = 'synthetic-continuum'\ntrain_variants = ['1', '2']\n"
        "val_variants = ['3']\n[clone]\nepochs = 0\nprior = { fgd_score = 100 }\n"
    )

    def train(recipe: str, *args: str) -> Any:
        path = tmp_path / "recipe.toml"
        path.write_text(common + recipe)
        words = ["--recipe", str(path), "--workers", "1", "--out", str(out)]
        return CliRunner().invoke(app, ["train", *words, "--models-dir", str(models), *args])

    gates = "[gates]\nseeds = [0, 1]\nwidths = [2, 8]\nz = 0\nmin_variants = 1\ndepth = 2\n"
    result = train(gates, "--register", "gated")
    assert result.exit_code == 0, result.output
    assert "tie gates: validation" in result.output and "registered ai:gated@1" in result.output
    assert (out / "gate_grid.npz").exists() and (out / "spec.json").exists()
    card = ModelRegistry(models).get("gated")
    assert card.spec["gate_seeds"] == [0, 1] and card.spec["gate_depth"] == 2
    shown = CliRunner().invoke(app, ["models", "show", "gated", "--models-dir", str(models)])
    assert shown.exit_code == 0 and "tie gates" in shown.output and " pods: width " in shown.output
    both = train("[gates]\nseeds = [0]\n[es]\ngenerations = 1\n")
    assert both.exit_code == 2 and "not both" in both.output
    bad = train("[gates]\nseeds = 'zero'\n")
    assert bad.exit_code == 2 and "gates.seeds: 'zero' is not an array" in bad.output
