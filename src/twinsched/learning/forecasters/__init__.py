"""Forecasters by name: ``seasonal-naive``, ``seasonal-naive-weekly``, ``ets``, ``lstm``."""

from twinsched.learning.forecasters.base import (
    Forecaster,
    forecaster_names,
    make_forecaster,
    register,
)

__all__ = ["Forecaster", "forecaster_names", "make_forecaster", "register"]
