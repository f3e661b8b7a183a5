"""Continuum recipes: the shipped files read, bad keys refused, and a tiny recipe trained
twice (once through ``twinsched train``, registered) gives the same card figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.model.cluster import Scenario
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.sim import scenarios
from twinsched.traces import synthetic
from twinsched.training.continuum.recipe import is_continuum, read_recipe
from twinsched.training.continuum.search import draw_seeds
from twinsched.training.continuum.train import card_metrics, train
from twinsched.training.recipe_check import RecipeFileError

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()
TINY = """
seed = 3
[scenario]
train_seeds = [100]
val_seeds = [0]
fault_rate = 0.5
outage_for_s = 0.0
energy = true
[objective]
weights = { wait_mean = 1.0, energy = 1.0 }
[method]
start = { bestfit = 1.0 }
generations = 1
population = 2
episodes = 1
[executor]
workers = 1
"""


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", ["continuum-wait-energy", "continuum-wait-carbon"])
def test_the_shipped_continuum_recipes_read(name: str, version: int) -> None:
    path = ROOT / "recipes" / f"{name}{'' if version == 1 else f'-{version}'}.toml"
    assert is_continuum(path) and not is_continuum(ROOT / "recipes" / "openb-es.toml")
    recipe = read_recipe(path)
    assert not set(recipe.val_seeds) & set(range(10, 20))  # 10-19 are held out
    assert not set(recipe.train_seeds) & set(range(20))
    assert recipe.guard == ("bestfit", "gpuclustering")[version - 1]
    assert recipe.reference == "fgd"
    card = ROOT / "src/twinsched/scheduling/ai/shipped_models" / name / str(version) / "card.json"
    assert json.loads(card.read_text())["spec"] == recipe.record()  # the recipe it shipped with


def test_unknown_keys_and_odd_populations_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(TINY.replace("[method]", "[method]\nnope = 1"))
    with pytest.raises(RecipeFileError, match="nope"):
        read_recipe(path)
    path.write_text(TINY.replace("population = 2", "population = 3"))
    with pytest.raises(RecipeFileError, match="even"):
        read_recipe(path)
    path.write_text(TINY.replace("wait_mean = 1.0", "wait = 1.0"))
    with pytest.raises(RecipeFileError, match="wait"):
        read_recipe(path)
    path.write_text(TINY.replace("[method]", '[method]\nfeatures = ["tie_rank", "nope"]'))
    with pytest.raises(RecipeFileError, match="nope"):
        read_recipe(path)
    path.write_text(TINY.replace("[method]", '[method]\nfeatures = ["tie_rank"]'))
    with pytest.raises(RecipeFileError, match="not in the scorer"):
        read_recipe(path)  # TINY's start weighs bestfit


def test_a_recipe_names_its_features_only_where_they_are_not_the_first_set(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.toml"
    path.write_text(TINY)
    assert "features" not in read_recipe(path).record()  # the @1 records stand
    path.write_text(TINY.replace("[method]", '[method]\nfeatures = ["bestfit", "tie_rank"]'))
    recipe = read_recipe(path)
    assert recipe.features == ("bestfit", "tie_rank")
    assert recipe.record()["features"] == ["bestfit", "tie_rank"]


def test_training_seeds_are_drawn_each_once_before_twice() -> None:
    import numpy as np

    drawn = draw_seeds([5, 6, 7], 5, np.random.default_rng(0))
    assert sorted(drawn[:3]) == [5, 6, 7] and len(drawn) == 5


def _small(trace: str, variant: str, data: object) -> Scenario:
    return synthetic.continuum(seed=int(variant), pods=300, hours=4.0)


def test_a_recipe_reproduces_its_card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenarios, "cached_scenario", _small)  # one worker: in this process
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    models = tmp_path / "models"
    result = runner.invoke(app, ["train", "--recipe", str(path), "--out", str(tmp_path / "a"),
                                 "--register", "tiny", "--models-dir", str(models)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "registered ai:tiny@1" in result.output and "CPU s" in result.output
    card = ModelRegistry(models).get("tiny")
    assert card.kind == "twinsched.continuum" and card.spec == read_recipe(path).record()
    again = train(read_recipe(path), tmp_path / "b")
    assert card_metrics(again.trained) == card.metrics
    assert (tmp_path / "a" / "scorer.json").read_text() == (
        tmp_path / "b" / "scorer.json"
    ).read_text()
    printed = runner.invoke(app, ["train", "--recipe", str(path), "--print-recipe"])
    assert json.loads(printed.output) == read_recipe(path).record()


QUEUED = '[method]\nsigma = 0.0\nqueue_features = ["short_est", "age"]\nqueue_start = { age = 0.5 }'


def test_queue_keys_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(TINY.replace("[method]", '[method]\nqueue_features = ["tomorrow"]'))
    with pytest.raises(RecipeFileError, match="tomorrow"):
        read_recipe(path)
    path.write_text(TINY.replace("[method]", "[method]\nqueue_start = { age = 1.0 }"))
    with pytest.raises(RecipeFileError, match="not queued"):
        read_recipe(path)
    path.write_text(TINY.replace("[method]", "[method]\nsigma = 0.0"))
    with pytest.raises(RecipeFileError, match="nothing to move"):
        read_recipe(path)
    path.write_text(TINY)
    assert "queue_features" not in read_recipe(path).record()  # earlier records stand


def test_a_recipe_learns_a_queue_order_with_the_node_scorer_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from twinsched.scheduling.ai.continuum import LinearScorer

    monkeypatch.setattr(scenarios, "cached_scenario", _small)
    path = tmp_path / "q.toml"
    path.write_text(TINY.replace("[method]", QUEUED))
    recipe = read_recipe(path)
    assert recipe.record()["queue_features"] == ["short_est", "age"]
    trained = train(recipe, tmp_path / "q").trained
    start = LinearScorer.from_start({"bestfit": 1.0})
    assert np.array_equal(trained.scorer.weights, start.weights)  # sigma = 0: kept
    assert trained.scorer.queue is not None
    assert trained.scorer.queue.features == ("short_est", "age")
    saved = json.loads((tmp_path / "q" / "scorer.json").read_text())
    assert saved["queue"]["features"] == ["short_est", "age"]
    assert saved["queue"]["weights"] == [float(w) for w in trained.scorer.queue.weights]
