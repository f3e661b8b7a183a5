"""The forecaster protocol and the registry of forecasters by name.

A forecaster is fitted once on a training series, then follows new observations with
``update`` (no re-fit) and forecasts the next ``horizon`` steps with ``predict``. Series hold
requests per minute per step; NaN gaps are filled by the caller (``series.fill_gaps``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from twinsched.learning.series import FloatArray
from twinsched.registry import Registry


@runtime_checkable
class Forecaster(Protocol):
    """Fit on a series, follow new observations, predict a horizon."""

    name: str

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        """Learn from ``y`` (no NaN); a day has ``day`` steps and a week ``week`` steps."""

    def update(self, y_new: FloatArray) -> None:
        """Append observations that follow what was seen so far (no re-fit)."""

    def predict(self, horizon: int) -> FloatArray:
        """The next ``horizon`` steps after the last observation."""


@runtime_checkable
class Storable(Protocol):
    """A forecaster that writes its fitted state to a folder and reads it back: a loaded copy
    predicts what the saved one would have, without fitting again."""

    name: str

    def save(self, folder: Path) -> None:
        """Write the fitted state (and the observations seen) into ``folder``."""

    def load(self, folder: Path) -> None:
        """Take the state that :meth:`save` wrote in ``folder``."""


STATE_FILE = "state.json"
ARRAYS_FILE = "arrays.npz"


class StateError(ValueError):
    """A saved forecaster state cannot be used; the message names the file and field."""


def write_state(folder: Path, name: str, meta: Mapping[str, Any], **arrays: Any) -> None:
    """``state.json`` (``meta`` plus the forecaster's name) and ``arrays.npz`` in ``folder``."""
    (folder / STATE_FILE).write_text(json.dumps({"forecaster": name, **meta}, sort_keys=True))
    with (folder / ARRAYS_FILE).open("wb") as fh:
        savez: Any = np.savez  # its stubs type every keyword as ``allow_pickle``
        savez(fh, **{k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()})


def read_state(
    folder: Path, name: str, fields: Mapping[str, type], arrays: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, FloatArray]]:
    """The meta and arrays that :func:`write_state` wrote for the forecaster ``name``; a missing
    file, another forecaster's state or a field of the wrong type raises :class:`StateError`."""
    path = folder / STATE_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        with np.load(folder / ARRAYS_FILE, allow_pickle=False) as npz:
            found = {k: np.asarray(npz[k], dtype=np.float64) for k in npz.files}
    except (OSError, ValueError) as exc:
        raise StateError(f"{folder}: unreadable forecaster state: {exc}") from None
    if not isinstance(meta, dict) or meta.get("forecaster") != name:
        got = meta.get("forecaster") if isinstance(meta, dict) else meta
        raise StateError(f"{path}: field 'forecaster': {got!r} is not {name!r}")
    for key, kind in fields.items():
        value = meta.get(key)
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            meta[key] = value = float(value)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise StateError(f"{path}: field {key!r}: {value!r:.40} is not a {kind.__name__}")
    if missing := [k for k in arrays if k not in found]:
        raise StateError(f"{folder / ARRAYS_FILE}: array(s) {missing} missing")
    return meta, found


Factory = Callable[[int], Forecaster]
_F = "twinsched.learning.forecasters."
BUILT_INS: dict[str, tuple[str | Factory, str]] = {
    "seasonal-naive": (_F + "naive:seasonal_naive", "the same step one day earlier"),
    "seasonal-naive-weekly": (_F + "naive:seasonal_naive_weekly", "the same step one week earlier"),
    "ets": (_F + "ets:ets", "ETS(A,N,A): additive Holt-Winters on the daily season (statsmodels)"),
    "lstm": (_F + "lstm:lstm", "LSTM (PyTorch), one step ahead, closed-loop over the horizon"),
    "dlinear": (_F + "deep:dlinear", "DLinear (neuralforecast; the deep extra), block by block"),
    "patchtst": (_F + "deep:patchtst", "PatchTST (neuralforecast; the deep extra), block by block"),
}
FORECASTERS: Registry[Factory] = Registry("forecaster", BUILT_INS, "twinsched.forecasters")


def register(name: str, factory: Factory, description: str) -> None:
    """Add a forecaster factory (called with a seed); duplicate names are refused."""
    FORECASTERS.register(name, factory, description)


def make_forecaster(name: str, seed: int = 0) -> Forecaster:
    """A new, unfitted forecaster by name; unknown names list the known ones."""
    return FORECASTERS.create(name, seed)


def forecaster_names() -> dict[str, str]:
    """Registered forecaster names and their descriptions."""
    return FORECASTERS.describe()


class History:
    """The observations a forecaster has seen, grown in amortised constant time."""

    def __init__(self, y: FloatArray) -> None:
        self._data = np.array(y, dtype=np.float64)
        self._n = len(self._data)

    def extend(self, y_new: FloatArray) -> None:
        need = self._n + len(y_new)
        if need > len(self._data):
            grown = np.empty(max(need, 2 * len(self._data)), dtype=np.float64)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n : need] = y_new
        self._n = need

    @property
    def values(self) -> FloatArray:
        return self._data[: self._n]
