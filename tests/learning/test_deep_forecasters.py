"""DLinear from neuralforecast (the ``deep`` extra): fitted with a tiny budget, saved, loaded,
and the message when the extra is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from twinsched.errors import MissingExtraError
from twinsched.learning.forecasters import make_forecaster
from twinsched.learning.forecasters.deep import DeepConfig, NeuralForecaster

from .helpers import daily_wave

DAY = 48


def test_dlinear_saves_loads_and_forecasts_block_by_block(tmp_path: Path) -> None:
    y = daily_wave(6, DAY, noise=1.0)
    config = DeepConfig(max_steps=20, windows_batch_size=32, learning_rate=0.01)
    saved = NeuralForecaster("DLinear", "dlinear", seed=3, config=config)
    saved.fit(y[: 5 * DAY], DAY, 7 * DAY)
    saved.update(y[5 * DAY : 5 * DAY + 5])
    saved.save(tmp_path)
    loaded = make_forecaster("dlinear")
    loaded.load(tmp_path)
    horizon = DAY // 4 * 2 + 3  # more than two blocks of h = day / 4
    forecast = saved.predict(horizon)
    assert forecast.shape == (horizon,) and (forecast >= 0).all()
    np.testing.assert_array_equal(loaded.predict(horizon), forecast)
    assert np.mean(np.abs(forecast - y[5 * DAY + 5 :][:horizon])) < 15  # wave spans 20..60


def test_a_missing_deep_extra_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "neuralforecast", None)  # import fails as if not installed
    with pytest.raises(MissingExtraError, match=r"neuralforecast: pip install 'twinsched\[deep\]'"):
        make_forecaster("dlinear").fit(daily_wave(6, DAY), DAY, 7 * DAY)
