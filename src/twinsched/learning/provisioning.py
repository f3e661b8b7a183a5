"""Forecast accuracy metrics that matter for provisioning, not only MAE and RMSE.

A forecast used to size a service is wrong in a costly way when its **peak over a window**
is below the real peak: the service is then under-provisioned. The under-provisioning rate
is the share of windows where that happens; the shortfall is by how much, relative to the
real peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.learning.series import FloatArray


@dataclass(frozen=True)
class ProvisioningScore:
    """Errors over a set of forecast windows (actual NaN steps are ignored)."""

    mae: float
    rmse: float
    mape_pct: float  # over the steps with a positive actual (NaN when there is none)
    under_rate_pct: float
    under_mean_pct: float
    under_max_pct: float
    windows: int


def score_windows(forecasts: list[FloatArray], actuals: list[FloatArray]) -> ProvisioningScore:
    """MAE and RMSE over all steps, and peak under-provisioning over the windows.

    ``under_mean_pct`` is the mean shortfall ``(real peak - forecast peak) / real peak`` over
    the under-provisioned windows only (0 when there are none); ``under_max_pct`` the worst.
    """
    if len(forecasts) != len(actuals):
        raise ValueError("one actual window per forecast window")
    errors: list[FloatArray] = []
    relative: list[FloatArray] = []
    shortfalls: list[float] = []
    counted = 0
    for forecast, actual in zip(forecasts, actuals, strict=True):
        ok = np.isfinite(actual)
        if not ok.any():
            continue
        counted += 1
        errors.append(forecast[ok] - actual[ok])
        positive = ok & (actual > 0)
        relative.append(np.abs(forecast[positive] - actual[positive]) / actual[positive])
        real_peak = float(actual[ok].max())
        fc_peak = float(forecast.max())
        if fc_peak < real_peak:
            shortfalls.append((real_peak - fc_peak) / real_peak if real_peak > 0 else 0.0)
    if not counted:
        raise ValueError("no window has an observed value")
    err = np.concatenate(errors)
    rel = np.concatenate(relative)
    return ProvisioningScore(
        mae=float(np.mean(np.abs(err))),
        rmse=float(np.sqrt(np.mean(err**2))),
        mape_pct=100.0 * float(np.mean(rel)) if len(rel) else float("nan"),
        under_rate_pct=100.0 * len(shortfalls) / counted,
        under_mean_pct=100.0 * float(np.mean(shortfalls)) if shortfalls else 0.0,
        under_max_pct=100.0 * float(np.max(shortfalls)) if shortfalls else 0.0,
        windows=counted,
    )
