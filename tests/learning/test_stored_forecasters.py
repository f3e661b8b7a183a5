"""Forecasters saved and loaded, versioned in the model store, and used by the autoscaler
without fitting again (``predictive:stored:NAME``), on the real NASA trace."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.learning.agents import Agent, AgentRunner, IntervalTrigger
from twinsched.learning.agents.simulated import (
    PolicyRule,
    ServiceSensor,
    SimulatedService,
    SimulatorActuator,
)
from twinsched.learning.autoscale import make_policy, simulate
from twinsched.learning.autoscale.experiment import AutoscaleSpec, run_experiment
from twinsched.learning.autoscale.policies import PolicyOptions
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.forecast_fit import FitSpec, fit_and_register
from twinsched.learning.forecasters import make_forecaster
from twinsched.learning.forecasters.base import STATE_FILE, StateError, read_state
from twinsched.learning.forecasters.lstm import LSTMConfig, LSTMForecaster
from twinsched.learning.forecasters.stored import stored_card
from twinsched.learning.series import LoadSeries, load_series
from twinsched.scheduling.ai.model_store import CARD, CardError, ModelError, ModelIntegrityError
from twinsched.sim.clock import SimClock

from .helpers import CountingETS, daily_wave

DAY = 48
TRACE = "nasa-http-1995"


@pytest.fixture(scope="module")
def nasa() -> LoadSeries:
    return load_series(TRACE)


def _tiny_lstm() -> LSTMForecaster:
    return LSTMForecaster(0, LSTMConfig(hidden=8, seq_len=24, batch=8, steps=30, warmup=24))


@pytest.mark.parametrize("name", ["seasonal-naive", "seasonal-naive-weekly", "ets", "lstm"])
def test_a_loaded_forecaster_predicts_what_the_saved_one_does(name: str, tmp_path: Path) -> None:
    y = daily_wave(10, DAY, noise=2.0)
    saved = _tiny_lstm() if name == "lstm" else make_forecaster(name, 0)
    saved.fit(y[: 8 * DAY], DAY, 7 * DAY)
    saved.update(y[8 * DAY : 8 * DAY + 7])
    saved.save(tmp_path)
    loaded = make_forecaster(name, 1)
    loaded.load(tmp_path)
    first = saved.predict(DAY + 5)
    np.testing.assert_array_equal(loaded.predict(DAY + 5), first)
    for model in (saved, loaded):  # and both follow new observations alike
        model.update(y[8 * DAY + 7 :])
    np.testing.assert_array_equal(loaded.predict(DAY), saved.predict(DAY))
    assert not np.array_equal(saved.predict(DAY + 5), first)


def test_a_state_of_another_forecaster_or_a_bad_field_is_refused(tmp_path: Path) -> None:
    ets = make_forecaster("ets")
    ets.fit(daily_wave(3, DAY), DAY, 7 * DAY)
    ets.save(tmp_path)
    with pytest.raises(StateError, match=r"state.json: field 'forecaster': 'ets' is not 'lstm'"):
        make_forecaster("lstm").load(tmp_path)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    (tmp_path / STATE_FILE).write_text(json.dumps(state | {"alpha": "high"}))
    with pytest.raises(StateError, match=r"field 'alpha': 'high' is not a float"):
        read_state(tmp_path, "ets", {"alpha": float})
    (tmp_path / STATE_FILE).write_text(json.dumps(state | {"pos": 10 * DAY}))
    with pytest.raises(StateError, match="field 'pos'"):
        make_forecaster("ets").load(tmp_path)


def test_autoscale_with_a_stored_forecaster_equals_a_fresh_fit_and_fits_nothing(
    nasa: LoadSeries, tmp_path: Path
) -> None:
    spec = AutoscaleSpec(TRACE, ("predictive:counting-ets",), eval_weeks=0.5)
    fresh = run_experiment(nasa, spec)[0]
    card = fit_and_register(nasa, FitSpec("counting-ets"), "nasa-ets", tmp_path)
    assert card.kind == "twinsched.forecaster" and card.spec["fit_steps"] == [1440, 2016]
    assert card.metrics["holdout_windows"] == 16 and card.metrics["holdout_mae"] > 0
    before = CountingETS.fits
    stored_spec = AutoscaleSpec(
        TRACE, ("predictive:stored:nasa-ets@1",), eval_weeks=0.5, models_dir=tmp_path
    )
    stored = run_experiment(nasa, stored_spec)[0]
    assert CountingETS.fits == before  # loaded, not fitted
    np.testing.assert_array_equal(stored.result.instances, fresh.result.instances)
    assert stored.margin == fresh.margin
    same = {k: v for k, v in stored.row.items() if k not in ("policy", "seconds")}
    assert same == {k: v for k, v in fresh.row.items() if k not in ("policy", "seconds")}


def test_an_agent_with_a_stored_forecaster_decides_as_a_fresh_fit(
    nasa: LoadSeries, tmp_path: Path
) -> None:
    train, rest = nasa.split(nasa.week)
    evaluation = rest.slice(0, 24 * 60)  # a day: the load rises and falls
    service = ServiceConfig()
    fresh = simulate(make_policy("predictive:ets"), train, evaluation, service, seed=2)
    fit_and_register(nasa, FitSpec("ets"), "nasa-ets", tmp_path)
    options = PolicyOptions(models_dir=tmp_path)
    stored = make_policy("predictive:stored:nasa-ets", options)
    rule = PolicyRule(stored, train, evaluation, service)
    live = SimulatedService(evaluation.values, start=0.0, service=service, seed=2, instances=0)
    agent = Agent("stored", IntervalTrigger(60.0, start=0.0), ServiceSensor(live), rule,
                  SimulatorActuator(live))  # fmt: skip
    AgentRunner([agent], SimClock(0.0)).run(until=len(evaluation) * 60.0)
    assert [row[2] for row in live.history] == fresh.instances.tolist()
    assert len(set(fresh.instances.tolist())) > 1  # it did scale


def test_a_stored_forecaster_refuses_other_data_and_a_missing_fit(
    nasa: LoadSeries, tmp_path: Path
) -> None:
    fit_and_register(nasa, FitSpec("seasonal-naive", holdout_days=0), "naive", tmp_path)
    two_weeks = AutoscaleSpec(
        TRACE, ("predictive:stored:naive",), train_weeks=2, eval_weeks=0.1, models_dir=tmp_path
    )
    with pytest.raises(ModelError, match="fitted on another training series"):
        run_experiment(nasa, two_weeks)
    one_week = AutoscaleSpec(
        TRACE, ("predictive:stored:naive",), eval_weeks=0.1, models_dir=tmp_path
    )
    with pytest.raises(ModelError, match=r"no fit on the first 1440 steps \(stored: \[2016\]\)"):
        run_experiment(nasa, one_week)


def test_versions_bad_cards_and_altered_files_are_told_apart(
    nasa: LoadSeries, tmp_path: Path
) -> None:
    spec = FitSpec("seasonal-naive", holdout_days=0)
    first = fit_and_register(nasa, spec, "naive", tmp_path)
    second = fit_and_register(nasa, spec, "naive", tmp_path)
    assert (first.version, second.version) == (1, 2)
    assert stored_card("stored:naive", tmp_path).version == 2
    assert stored_card("naive@1", tmp_path).data_checksum == second.data_checksum
    card_file = second.path / CARD
    card = json.loads(card_file.read_text())
    card_file.write_text(json.dumps(card | {"kind": "twinsched.policy"}))
    with pytest.raises(CardError, match=r"naive/2/card.json: field 'kind': 'twinsched.policy'"):
        stored_card("naive@2", tmp_path)
    del card["spec"]["forecaster"]
    card_file.write_text(json.dumps(card))
    with pytest.raises(CardError, match=r"field 'spec.forecaster': None is not a str"):
        stored_card("naive@2", tmp_path)
    (first.path / "fit-2016" / "arrays.npz").write_bytes(b"not the saved arrays")
    with pytest.raises(ModelIntegrityError, match=r"naive@1: file 'fit-2016/arrays\.npz'"):
        stored_card("naive@1", tmp_path)


def test_forecast_fit_registers_and_models_list_shows_the_kind(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["forecast-fit", "--forecaster", "seasonal-naive", "--register", "nasa-naive"]
    args += ["--models-dir", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "registered nasa-naive@1 (twinsched.forecaster" in result.output
    listed = runner.invoke(app, ["models", "list", "--models-dir", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    assert "nasa-naive" in listed.output and "twinsched.forecaster" in listed.output
    bad = runner.invoke(app, [*args[:-2], "--models-dir", str(tmp_path), "--train-weeks", "9"])
    assert bad.exit_code != 0 and "--train-weeks 9 is outside 1..8" in bad.output


def test_an_agent_file_naming_a_stored_forecaster_follows_the_history_without_refitting(
    nasa: LoadSeries, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomllib

    from twinsched.learning.agents.config import AgentConfigError, parse_agent_file
    from twinsched.learning.agents.forecasting import ForecastRule
    from twinsched.learning.agents.loader import build_agents, twin_client
    from twinsched.learning.forecast_fit import training_bins

    card = fit_and_register(nasa, FitSpec("counting-ets"), "live-ets", tmp_path)
    monkeypatch.setenv("TWINSCHED_MODELS", str(tmp_path))
    example = Path(__file__).resolve().parents[2] / "docs" / "agents" / "edge-autoscaler.toml"
    data = tomllib.loads(example.read_text())
    rule = data["agents"][0]["rule"]
    rule.update(forecaster="stored:live-ets", day_steps=card.spec["day"], step_s=300.0)
    spec = parse_agent_file(data, "agent.toml")
    with twin_client(spec, {"TWINSCHED_TWIN_TOKEN": "t"}) as client:
        agent = build_agents(spec, client, start=0.0)[0]
    assert isinstance(agent.rule, ForecastRule) and agent.rule.fitted
    live = nasa.values[nasa.week : nasa.week + 2 * nasa.day : 5]  # 2 days in 5-minute steps
    agent.rule.series = lambda now: np.asarray(live, dtype=np.float64)
    before = CountingETS.fits
    first = agent.rule.forecast(0.0)
    second = agent.rule.forecast(0.0)  # each firing starts again from the stored fit
    assert CountingETS.fits == before  # loaded and updated, never fitted
    bins = training_bins(nasa, FitSpec("counting-ets"))
    expected = make_forecaster("ets", 0)
    expected.fit(bins.values, bins.day, bins.week)
    expected.update(np.asarray(live, dtype=np.float64))
    assert first is not None and second is not None
    np.testing.assert_allclose(first, expected.predict(agent.rule.horizon), rtol=1e-9)
    np.testing.assert_array_equal(first, second)
    rule["day_steps"] = card.spec["day"] + 1  # a day the stored fit was not made with
    with (
        twin_client(parse_agent_file(data), {"TWINSCHED_TWIN_TOKEN": "t"}) as client,
        pytest.raises(AgentConfigError, match=r"forecaster: live-ets@1 was fitted with a day"),
    ):
        build_agents(parse_agent_file(data), client, start=0.0)
