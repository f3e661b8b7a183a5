"""Recipe files of ``twinsched train`` and ``twinsched distil``: the shipped models' recipes,
the default recipe written and read back, overrides, and hostile files refused with one line
naming the file, the key and the accepted values (no traceback, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.training.recipe_check import MAX_FILE_BYTES
from twinsched.training.recipe_file import (
    DEFAULT_RECIPE,
    distil_spec,
    distil_toml,
    recipe_toml,
    train_recipe,
)
from twinsched.training.specs import ClonePhase, DaggerPhase, DataSpec, Recipe

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "src" / "twinsched" / "scheduling" / "ai" / "shipped_models"
# keys the recipe records that were added after a shipped model was trained, at the value
# that trains as before (the model's card has no such key)
ADDED_SINCE = {"openb-gates": {"teacher_contested_only": False}, "openb-rerank": {}}
runner = CliRunner()


def _card_spec(model: str) -> dict[str, object]:
    card = json.loads((SHIPPED / model / "1" / "card.json").read_text(encoding="utf-8"))
    spec: dict[str, object] = card["spec"]
    return spec


def _as_json(record: dict[str, object]) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(json.dumps(record))  # tuples as lists, as stored
    return loaded


def test_the_shipped_recipes_are_the_recipes_of_the_shipped_models() -> None:
    gates = train_recipe(ROOT / "recipes" / "openb-gates.toml")
    assert _as_json(gates.record()) == {**_card_spec("openb-gates"), **ADDED_SINCE["openb-gates"]}
    rerank = distil_spec(ROOT / "recipes" / "openb-rerank.toml")
    assert _as_json(rerank.record()) == _card_spec("openb-rerank")
    assert rerank == distil_spec(None)  # the default distillation is the shipped one


def test_the_default_recipe_is_what_train_trained_without_options() -> None:
    assert (
        train_recipe(None)
        == DEFAULT_RECIPE
        == Recipe(
            DataSpec(
                train_variants=("default", "cpu050", "gpushare40", "multigpu30", "gpuspec10"),
                val_variants=("cpu100",),
            ),
            ClonePhase(epochs=8),
            DaggerPhase(rounds=0),
        )
    )


@pytest.mark.parametrize("command", ["train", "distil"])
def test_a_printed_recipe_reads_back_as_the_same_recipe(command: str, tmp_path: Path) -> None:
    printed = runner.invoke(app, [command, "--print-recipe"])
    assert printed.exit_code == 0, printed.output
    path = tmp_path / "printed.toml"
    path.write_text(printed.output)
    again = runner.invoke(app, [command, "--recipe", str(path), "--print-recipe"])
    assert again.exit_code == 0 and again.output == printed.output
    if command == "train":
        assert (
            printed.output == recipe_toml(DEFAULT_RECIPE) and train_recipe(path) == DEFAULT_RECIPE
        )
    else:
        assert printed.output == distil_toml(distil_spec(None))
    assert not list(tmp_path.glob("out*")) and not (tmp_path / "out").exists()


def test_options_override_the_file_and_scenarios_replace_its_variants(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text("seed = 3\nworkers = 2\n[es]\nfeatures = 'standard'\n")
    printed = runner.invoke(app, ["train", "--recipe", str(path), "--seed", "9", "--print-recipe"])
    assert printed.exit_code == 0 and "seed = 9\nworkers = 2\n" in printed.output
    assert len(train_recipe(path).es.features) > 1  # the standard residual's features
    stored = train_recipe(path, ("s1", "s2"))
    assert stored.data.trace == "store" and stored.data.train_variants == ("s1", "s2")
    assert stored.data.val_variants == ("s1", "s2")  # the file names no validation variants
    path.write_text("[data]\nval_variants = ['s3']\n")
    assert train_recipe(path, ("s1",)).data.val_variants == ("s3",)


BAD_TRAIN = [
    ("[clone]\nepochs = -1\n", "clone.epochs: -1 is outside the range; accepted: integer 0..10000"),
    ("[clone]\nepochs = 1.5\n", "clone.epochs: 1.5 is not an integer; accepted: integer 0..10000"),
    ("[clone]\nepochs = true\n", "clone.epochs: True is not an integer"),
    ("[clone]\nepoch = 1\n", "unknown key 'clone.epoch'; known: candidates, epochs, patience"),
    ("[clown]\nepochs = 1\n", "unknown key 'clown'; known: seed, workers, [clone], [dagger]"),
    ("clone = 3\n", "clone: 3 is not a section; accepted: a [clone] table"),
    (
        "seed = 4294967296\n",
        "seed: 4294967296 is outside the range; accepted: integer 0..4294967295",
    ),
    ("[es]\nsigma = nan\n", "es.sigma: nan is outside the range; accepted: number >0..100"),
    ("[es]\nsigma = 0\n", "es.sigma: 0 is outside the range; accepted: number >0..100"),
    ("[es]\nbase_width = inf\n", "es.base_width: inf is outside the range"),
    ("[es]\nlr = '1'\n", "es.lr: '1' is not a number"),
    ("[es]\nfeatures = 'best'\n", "es.features: 'best' is not an array; accepted: \"standard\""),
    ("[gates]\nz = -1\n", "gates.z: -1 is outside the range; accepted: number 0..100"),
    (
        "[gates]\nseeds = [-1]\n",
        "gates.seeds: -1 is outside the range; accepted: an array of "
        "0..10000 items, each integer 0..4294967295",
    ),
    ("[gates]\nwidths = []\n", "gates.widths: 0 items; accepted: an array of 1..1000 items"),
    ("[ties]\nresolutions = [1e7]\n", "ties.resolutions: 10000000.0 is outside the range"),
    ("[data]\ntrain_variants = []\n", "data.train_variants: 0 items"),
    ("[data]\ntrace = ' x'\n", "data.trace: ' x' is not a name; accepted: a string of 1..200"),
    ('[data]\ntrace = "a\\u0007b"\n', "data.trace: 'a\\x07b' holds a control character"),
    ("[data]\nval_seeds = [1, 'two']\n", "data.val_seeds: 'two' is not an integer"),
    ("[clone]\nprior = { fgd_score = 1e7 }\n", "clone.prior: 10000000.0 is outside the range"),
    ("[clone]\nprior = [1]\n", "clone.prior: [1] is not a table"),
    ("[gates]\nseeds = [0]\n[es]\ngenerations = 1\n", "choose evolution strategies or tie gates"),
    ("[clone\n", "not TOML"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", "not TOML"),
    ("[data]\ntrace = '" + "x" * 300 + "'\n", "data.trace: 'xxxxx"),
]


def _refused(command: str, text: str | bytes, says: str, tmp_path: Path) -> str:
    path = tmp_path / "bad.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "out"
    result = runner.invoke(app, [command, "--recipe", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = " ".join(result.output.split())
    assert "Traceback" not in line and says in line and str(path) in line
    assert len(line) < 600 and not out.exists()  # one bounded line; nothing written
    return line


@pytest.mark.parametrize(("text", "says"), BAD_TRAIN, ids=range(len(BAD_TRAIN)))
def test_a_bad_training_recipe_is_refused_naming_file_key_and_range(
    text: str, says: str, tmp_path: Path
) -> None:
    _refused("train", text, says, tmp_path)


def test_an_oversized_or_binary_recipe_is_refused(tmp_path: Path) -> None:
    big = "# padding\n" * (MAX_FILE_BYTES // 10 + 1)
    _refused("train", big, f"larger than {MAX_FILE_BYTES:,} bytes", tmp_path)
    _refused("distil", b"seed = 1\n\xff\xfe", "not UTF-8", tmp_path)


BAD_DISTIL = [
    ("hidden = [0]\n", "hidden: 0 is outside the range; accepted: an array of 0..16 items"),
    ("hidden = 32\n", "hidden: 32 is not an array"),
    ("epochs = 0\n", "epochs: 0 is outside the range; accepted: integer 1..10000"),
    ("gate_min_gain = -101\n", "gate_min_gain: -101 is outside the range; accepted: number -100.."),
    ("margin = -inf\n", "margin: -inf is outside the range; accepted: number 0..1000"),
    ("mix = 1\n", "mix: 1 is not true or false"),
    ("batch = 64\n", "unknown key 'batch'; known: blend_seed, blends, epochs, frag_weight"),
    ("[data]\nseeds = [0]\n", "unknown key 'data'; known: blend_seed"),
    ("blends = -1\n", "blends: -1 is outside the range; accepted: integer 0..10000"),
    ('variants = ["default", "cpu0"]\nblends = 82\n', "blends: count must be in [0, 81]"),
]


@pytest.mark.parametrize(("text", "says"), BAD_DISTIL, ids=range(len(BAD_DISTIL)))
def test_a_bad_distillation_recipe_is_refused_naming_file_key_and_range(
    text: str, says: str, tmp_path: Path
) -> None:
    _refused("distil", text, says, tmp_path)


def test_no_gate_reads_as_none_and_writes_back_as_minus_100(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text("gate_min_gain = -100\nhidden = []\n")
    spec = distil_spec(path)
    assert spec.gate_min_gain is None and spec.hidden == ()
    path.write_text(distil_toml(spec))
    assert distil_spec(path) == spec


def test_blends_add_teacher_runs_between_the_variants_and_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('variants = ["default", "cpu0", "gpuspec25"]\nblends = 4\nblend_seed = 7\n')
    spec = distil_spec(path)
    assert spec.teacher_variants[:3] == spec.variants and len(spec.teacher_variants) == 7
    assert all(v.startswith("blend-") for v in spec.teacher_variants[3:])
    assert spec.record()["blends"] == 4 and spec.record()["blend_seed"] == 7
    path.write_text(distil_toml(spec))
    assert distil_spec(path) == spec
    assert "blends" not in distil_spec(None).record()  # a recipe without blends: as before
