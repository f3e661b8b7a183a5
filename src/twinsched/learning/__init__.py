"""The learning plane: load forecasters, predictive autoscaling, agents with triggers.

Nothing here imports torch; only the LSTM forecaster does, when it is fitted.
"""

from twinsched.learning.forecasters import Forecaster, forecaster_names, make_forecaster
from twinsched.learning.series import LoadSeries, load_series

__all__ = ["Forecaster", "LoadSeries", "forecaster_names", "load_series", "make_forecaster"]
