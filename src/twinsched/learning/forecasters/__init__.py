"""Forecasters by name: ``seasonal-naive``, ``seasonal-naive-weekly``, ``ets``, ``lstm``,
``dlinear`` and ``patchtst``."""

from twinsched.learning.forecasters.base import (
    Forecaster,
    forecaster_names,
    make_forecaster,
    register,
)

__all__ = ["Forecaster", "forecaster_names", "make_forecaster", "register"]
