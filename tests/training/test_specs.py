"""The recipe: one spec per phase, checks across phases, the flat record saved models keep."""

from __future__ import annotations

import pytest

from twinsched.errors import TwinschedError
from twinsched.training.specs import EsPhase, GatePhase, Recipe

# The keys models and spec.json have always stored, in their order.
RECORD_KEYS = (
    "trace", "train_variants", "val_variants", "teacher", "seeds", "val_seeds", "dagger_rounds",
    "epochs", "patience", "batch", "lr", "hidden", "candidates", "seed", "target_pct", "data",
    "prior", "ppo_updates", "ppo_steps", "ppo_segment", "ppo_max_offset", "ppo_eval_every",
    "tie_resolutions", "teacher_ties", "es_generations", "es_population", "es_episodes",
    "es_sigma", "es_sigma_width", "es_sigma_slope", "es_base_width", "es_lr", "es_features",
    "es_seeds", "es_val_on_train", "es_patience", "workers", "gate_seeds", "gate_widths", "gate_z",
    "gate_min_variants", "gate_depth", "teacher_contested_only",
)  # fmt: skip


def test_the_record_keeps_the_stored_keys_in_order() -> None:
    record = Recipe(es=EsPhase(population=10), gates=GatePhase(depth=2)).record()
    assert tuple(record) == RECORD_KEYS
    assert record["es_population"] == 10 and record["gate_depth"] == 2


def test_phases_are_checked_together_and_the_mix_error_comes_first() -> None:
    with pytest.raises(TwinschedError, match="not both"):
        Recipe(es=EsPhase(generations=1), gates=GatePhase(seeds=(0,), z=-1.0))
    with pytest.raises(TwinschedError, match="gate_z >= 0"):
        Recipe(gates=GatePhase(seeds=(0,), z=-1.0))
    Recipe(gates=GatePhase(z=-1.0))  # no gate seeds: the gates do not run
