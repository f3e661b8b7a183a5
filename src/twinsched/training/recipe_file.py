"""Recipe files of ``twinsched train`` and ``twinsched distil``: their keys, ranges, defaults.

A training recipe file mirrors :class:`~twinsched.training.specs.Recipe`: top-level ``seed``
and ``workers``, and one section per phase (``[data]``, ``[clone]``, ``[dagger]``, ``[ppo]``,
``[es]``, ``[gates]``, ``[ties]``) whose keys are the phase's fields. A key the file leaves
out keeps its value in :data:`DEFAULT_RECIPE` (what ``twinsched train`` trains without a
file). A distillation file has the top-level keys of
:class:`~twinsched.training.distil.DistilSpec`; left out, :data:`DISTIL_DEFAULTS` (the
shipped ``openb-rerank`` model's recipe). :data:`TRAIN_SCHEMA` and :data:`DISTIL_SCHEMA` are
the one statement of every key's range (``docs/ai.md`` lists them); the fields a file cannot
set (batch, learning rate, network of cloning; PPO's segments; ES's seeds; the data folder,
given by ``--data``/``--db``) keep the spec's defaults.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.training import specs as ts
from twinsched.training.recipe_check import (
    SEED_MAX,
    RecipeFileError,
    Rule,
    Schema,
    array,
    check,
    flag,
    integer,
    name,
    names,
    number,
    read_toml,
    seeds,
    table,
    toml_text,
)

if TYPE_CHECKING:
    from twinsched.training.distil.margins import DistilSpec

WORKERS_MOST = 1024  # processes for ES, gate and distillation runs
SEED = integer(0, SEED_MAX)
WORKERS = integer(0, WORKERS_MOST)
WIDTHS = array(1, number(0, 1e6))
STANDARD = "standard"  # es.features: the standard residual's (evolution.ES_FEATURES)


def _features(value: Any) -> tuple[str, ...]:
    if value != STANDARD:
        converted: tuple[str, ...] = names(0).convert(value)
        return converted
    from twinsched.training.evolution import ES_FEATURES

    return tuple(ES_FEATURES)


FEATURES = Rule(f'"{STANDARD}" (evolution.ES_FEATURES) or {names(0).accepted}', _features)

TRAIN_SCHEMA: Schema = {
    "": {"seed": SEED, "workers": WORKERS},
    "data": {
        "trace": name(), "train_variants": names(), "val_variants": names(),
        "val_seeds": seeds(), "val_on_train": flag(),
    },
    "clone": {
        "teacher": name(), "seeds": seeds(), "epochs": integer(0, 10_000),
        "patience": integer(0, 10_000), "candidates": integer(1, 4096),
        "prior": table(name(), number(-1e6, 1e6)), "teacher_ties": flag(),
        "teacher_contested_only": flag(),
    },
    "dagger": {"rounds": integer(0, 100)},
    "ppo": {"updates": integer(0, 100_000), "steps": integer(1, 10_000_000)},
    "es": {
        "generations": integer(0, 100_000), "population": integer(2, 10_000),
        "episodes": integer(1, 10_000), "sigma": number(0, 100, open_lo=True),
        "sigma_width": number(0, 100), "sigma_slope": number(0, 100),
        "base_width": number(0, 1e6, open_lo=True), "lr": number(0, 100, open_lo=True),
        "features": FEATURES, "patience": integer(1, 100_000),
    },
    "gates": {
        "seeds": seeds(0), "widths": WIDTHS, "z": number(0, 100),
        "min_variants": integer(1, 1000), "depth": integer(1, 16),
    },
    "ties": {"resolutions": WIDTHS},
}  # fmt: skip

DEFAULT_RECIPE = ts.Recipe(  # what `twinsched train` trains without a recipe file
    data=ts.DataSpec(
        train_variants=("default", "cpu050", "gpushare40", "multigpu30", "gpuspec10"),
        val_variants=("cpu100",),
    ),
    clone=ts.ClonePhase(epochs=8),
    dagger=ts.DaggerPhase(rounds=0),
)

OPENB_VARIANTS = (  # every openb variant but the six held out (bench/heldout.py)
    "default", "cpu0", "cpu050", "cpu100", "cpu200", "cpu250", "cpu300", "gpushare20",
    "gpushare40", "gpushare80", "gpushare100", "multigpu20", "multigpu30", "multigpu50",
    "gpuspec05", "gpuspec10", "gpuspec25", "gpuspec33",
)  # fmt: skip
NO_GATE = -100.0  # gate_min_gain: fit no gate

DISTIL_SCHEMA: Schema = {
    "": {
        "teacher": name(), "trace": name(), "variants": names(), "seeds": seeds(),
        "val_variants": names(0), "val_seeds": seeds(),
        "hidden": array(0, integer(1, 4096), 16), "epochs": integer(1, 10_000),
        "frag_weight": number(0, 1000), "mix": flag(), "margin": number(0, 1000),
        "gate_min_gain": number(NO_GATE, 100), "seed": SEED,
        "blends": integer(0, 10_000), "blend_seed": SEED,
    },
}  # fmt: skip

DISTIL_DEFAULTS: dict[str, Any] = {  # left out of a distillation file (openb-rerank's recipe)
    "teacher": "lookahead:fgd/c=4/h=32/s=4/a=35", "trace": "alibaba-gpu-2023",
    "variants": OPENB_VARIANTS, "seeds": (0, 1), "val_variants": OPENB_VARIANTS,
    "val_seeds": (100, 101), "hidden": (32,), "epochs": 15, "frag_weight": 1.0, "mix": False,
    "margin": 0.005, "gate_min_gain": 0.1, "seed": 0, "blends": 0, "blend_seed": 0,
}  # fmt: skip


def _values(path: Path | None, schema: Schema) -> dict[str, dict[str, Any]]:
    return check(read_toml(path), schema, str(path)) if path is not None else {"": {}}


def train_recipe(path: Path | None, scenarios: tuple[str, ...] = ()) -> ts.Recipe:
    """The recipe of ``path`` (None: :data:`DEFAULT_RECIPE`). ``scenarios`` (stored scenarios,
    ``--scenario``) replace the trace and the training variants, and the validation variants
    too unless the file names them."""
    values = _values(path, TRAIN_SCHEMA)
    data = values.setdefault("data", {})
    if scenarios:
        from twinsched.sim.scenarios import STORE

        data.setdefault("val_variants", scenarios)
        data.update(trace=STORE, train_variants=scenarios)
    phases = {
        section: replace(getattr(DEFAULT_RECIPE, section), **body)
        for section, body in values.items()
        if section
    }
    try:
        return replace(DEFAULT_RECIPE, **values[""], **phases)
    except TwinschedError as exc:  # a rule across phases (ES or gates)
        raise RecipeFileError(f"{path or 'the default recipe'}: {exc}") from None


def recipe_toml(recipe: ts.Recipe) -> str:
    """``recipe`` as a recipe file (every key :data:`TRAIN_SCHEMA` knows)."""
    values: dict[str, dict[str, Any]] = {"": {k: getattr(recipe, k) for k in TRAIN_SCHEMA[""]}}
    for section, rules in TRAIN_SCHEMA.items():
        if section:
            phase = getattr(recipe, section)
            values[section] = {key: getattr(phase, key) for key in rules}
    values["clone"]["prior"] = dict(recipe.clone.prior)
    return toml_text(values, "twinsched train --recipe FILE (docs/ai.md, Recipe files)")


def distil_spec(path: Path | None) -> DistilSpec:
    """The distillation spec of ``path`` (None: :data:`DISTIL_DEFAULTS`)."""
    from twinsched.training.distil.margins import DistilSpec

    given = {**DISTIL_DEFAULTS, **_values(path, DISTIL_SCHEMA)[""]}
    gain = given.pop("gate_min_gain")
    spec = DistilSpec(**given, gate_min_gain=None if gain <= NO_GATE else gain)
    try:
        spec.teacher_variants  # noqa: B018 (the blends are drawn here, so a bad count fails here)
    except ValueError as e:
        raise RecipeFileError(f"{path}: blends: {e}") from e
    return spec


def distil_toml(spec: DistilSpec) -> str:
    """``spec`` as a distillation recipe file (every key :data:`DISTIL_SCHEMA` knows)."""
    body = {key: getattr(spec, key) for key in DISTIL_SCHEMA[""]}
    if spec.gate_min_gain is None:
        body["gate_min_gain"] = NO_GATE
    return toml_text({"": body}, "twinsched distil --recipe FILE (docs/ai.md, Recipe files)")
