"""Distilling the look-ahead: its rollout values recorded, fitted, validated, registered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.scheduling import registry
from twinsched.scheduling.ai.rerank import RERANK_FEATURES, RerankScheduler
from twinsched.scheduling.ai.serving import create_ai_scheduler
from twinsched.training.distil.fit import centred, decision_agreement, fit, scores_of
from twinsched.training.distil.margins import DistilSpec, Margins, record_job, teacher_shortlist
from twinsched.training.distil.run import distil, register

CHEAP = "lookahead:fgd/c=3/h=4/s=2/a=90"  # rollouts only near the end of a fill-up
RANK = RERANK_FEATURES.index("candidate_rank")


def _synthetic(decisions: int, seed: int = 0) -> Margins:
    """Decisions of 3 candidates whose value is feature 0 minus feature 1 (plus noise)."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((3 * decisions, len(RERANK_FEATURES))).astype(np.float32)
    value = (1000.0 * (rows[:, 0] - rows[:, 1]) + rng.normal(0, 100.0, rows.shape[0])).astype(
        np.float64
    )
    group = np.repeat(np.arange(decisions), 3)
    return Margins(rows, value, np.zeros(rows.shape[0]), group)


def test_fit_learns_which_candidate_is_worth_more() -> None:
    train, test = _synthetic(2000), _synthetic(500, seed=1)
    policy = fit(train, DistilSpec(hidden=(16,), epochs=8, batch=64))
    assert policy.features == DistilSpec().features  # no fragmentation nor workload mix
    got = decision_agreement(scores_of(policy, test).astype(float), test.values(1.0), test.group)
    chance = decision_agreement(np.zeros(test.rows.shape[0]), test.values(1.0), test.group)
    assert got["agreement"] > 0.85 > chance["agreement"] + 0.4
    assert got["value_over_first"] > chance["value_over_first"] + 0.5


def test_the_agreement_counts_fgds_first_unless_the_best_beats_it_by_the_margin() -> None:
    scores, values = np.array([0.0, 0.004, 1.0, 1.3]), np.array([1.0, 2.0, 5.0, 4.0])
    group = np.array([0, 0, 1, 1])
    assert decision_agreement(scores, values, group) == {"agreement": 0.5, "value_over_first": 0.0}
    assert decision_agreement(scores, values, group, margin=0.005) == {
        "agreement": 0.0,
        "value_over_first": -0.5,
    }


def test_only_differences_within_a_decision_are_learned() -> None:
    values, group = np.array([1.0, 3.0, 10.0, 10.0, 13.0]), np.array([0, 0, 1, 1, 1])
    assert centred(values, group).tolist() == [-1.0, 1.0, -1.0, -1.0, 2.0]


def test_a_teacher_run_records_each_compared_decision_in_fgd_order() -> None:
    part = record_job((CHEAP, "alibaba-gpu-2023", "default", None, 0))
    teacher = registry.create(CHEAP)
    assert part.decisions > 50 and part.rows.shape == (part.group.size, len(RERANK_FEATURES))
    firsts = np.flatnonzero(np.r_[True, part.group[1:] != part.group[:-1]])
    assert (part.rows[firsts, RANK] == 0).all()  # every decision starts with FGD's choice
    assert (part.rows[:, RERANK_FEATURES.index("alloc_frac")] >= 0.9).all()
    assert np.isfinite(part.placed).all() and (part.placed >= 0).all()
    assert part.label == "default/0" and teacher.name.startswith("lookahead:fgd/c=3")


def test_only_a_look_ahead_teaches(tmp_path: Path) -> None:
    with pytest.raises(TwinschedError, match="must be lookahead"):
        teacher_shortlist("fgd")
    assert teacher_shortlist(CHEAP).candidates == 3
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('teacher = "fgd"\nvariants = ["default"]\n')
    result = CliRunner().invoke(app, ["distil", "--recipe", str(recipe)])
    assert result.exit_code != 0 and "lookahead" in result.output


def test_distil_registers_a_reranker_that_serves_and_is_the_same_on_any_worker_count(
    tmp_path: Path,
) -> None:
    spec = DistilSpec(
        teacher=CHEAP, variants=("default",), seeds=(0,), val_variants=("cpu250", "cpu0"),
        val_seeds=(100,), hidden=(8,), epochs=2, gate_min_gain=-100.0,
    )  # fmt: skip
    one = distil(spec, workers=1)
    two = distil(spec, workers=2)
    assert one.policy.checksum() == two.policy.checksum()
    assert one.data_checksum == two.data_checksum and one.metrics == two.metrics
    assert set(one.metrics) >= {"decisions", "val_gain/cpu250", "val_gain_over_fgd"}
    # every variant gains at least -100 points: the gate is fitted, and open everywhere
    assert one.metrics["gated_val_gain_over_fgd"] == one.metrics["val_gain_over_fgd"]
    assert one.policy.meta["shortlist"] == {**teacher_shortlist(CHEAP).to_meta(), "gate": {}}
    card = register(spec, one, "rr", tmp_path)
    served = create_ai_scheduler("ai:rr", tmp_path)
    assert isinstance(served, RerankScheduler) and card.kind == "twinsched.reranker"
    assert served.params == teacher_shortlist(CHEAP)
