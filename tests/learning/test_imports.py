"""The core of the learning plane never imports torch; the LSTM names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

import twinsched.learning
import twinsched.learning.agents
import twinsched.learning.autoscale
from twinsched.learning.forecasters.lstm import INSTALL_HINT, LSTMForecaster


def test_core_imports_nothing_from_torch() -> None:
    code = (
        "import sys, twinsched.learning, twinsched.learning.autoscale, twinsched.learning.agents,"
        " twinsched.cli.learning, twinsched.learning.backtest;"
        "from twinsched.learning.forecasters import make_forecaster;"
        "make_forecaster('lstm');"
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lstm_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"twinsched\[learning\]"):
        LSTMForecaster().fit([1.0] * 500, 48, 336)  # type: ignore[arg-type]
    assert "twinsched[learning]" in INSTALL_HINT


@pytest.mark.parametrize(
    "module", [twinsched.learning, twinsched.learning.autoscale, twinsched.learning.agents]
)
def test_public_api_is_curated(module: object) -> None:
    names = module.__all__  # type: ignore[attr-defined]
    assert names == sorted(names)
    assert all(hasattr(module, name) for name in names)
