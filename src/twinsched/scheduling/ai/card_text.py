"""A model card's metrics as text, for tables and messages (``models list``, ``ai:`` errors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def format_metrics(metrics: Mapping[str, Any], limit: int | None = None) -> str:
    """``key=value, ...`` by key (the first ``limit``), floats to 4 significant digits."""
    return ", ".join(f"{k}={format_value(v)}" for k, v in sorted(metrics.items())[:limit])


def format_value(value: Any) -> str:
    """A metric value for a table: floats to 4 significant digits."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
