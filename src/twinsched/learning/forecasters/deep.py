"""Deep forecasters from Nixtla's neuralforecast: DLinear and PatchTST (the ``deep`` extra).

Both read a fixed look-back (``input_days`` days) and output a fixed block of ``h`` steps at
once (a quarter of a day by default); a longer horizon is forecast block by block, each block
fed back as observations (recursive multi-step). ``update`` only appends observations: the
weights stay as fitted. Training runs on the CPU, on one thread, with a fixed seed, so the same
fit gives the same weights.

Saved state: the library's own files (``NeuralForecast.save``: the model's configuration and a
Lightning checkpoint holding its ``state_dict``) in ``neuralforecast/``, plus the observations
seen and the shape in ``state.json``/``arrays.npz``. neuralforecast (and so torch and
Lightning) is imported only here, and only when a model is fitted or loaded.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twinsched.extras import require
from twinsched.learning.forecasters.base import History, StateError, read_state, write_state
from twinsched.learning.series import FloatArray

WHY = "the deep forecasters (DLinear, PatchTST) need neuralforecast"
LIBRARY_FOLDER = "neuralforecast"
_QUIET = ("pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric")


def import_neuralforecast() -> Any:
    """neuralforecast, or an error naming the extra to install (``twinsched[deep]``)."""
    return require("neuralforecast", "deep", WHY)


@dataclass(frozen=True)
class DeepConfig:
    """Shape and training budget; the defaults fit DLinear on a week of 5-minute bins in a
    few seconds on one core."""

    input_days: float = 2.0
    blocks_per_day: int = 4  # h = day // blocks_per_day steps forecast at once
    max_steps: int = 300
    windows_batch_size: int = 256
    learning_rate: float = 1e-3
    model_options: tuple[tuple[str, Any], ...] = ()  # the model class's own arguments


class NeuralForecaster:
    """A neuralforecast model (``DLinear``, ``PatchTST``, ...) behind the forecaster protocol."""

    def __init__(self, model: str, name: str, seed: int = 0, config: DeepConfig | None = None):
        self.model = model
        self.name = name
        self.seed = seed
        self.config = config or DeepConfig()
        self.fit_seconds = 0.0
        self._history = History(np.zeros(0))
        self._h = 0
        self._input = 0
        self._nf: Any = None

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        library = import_neuralforecast()
        models = require("neuralforecast.models", "deep", WHY)
        cfg = self.config
        self._h = max(day // cfg.blocks_per_day, 1)
        self._input = max(round(cfg.input_days * day), 1)
        if len(y) < self._input + self._h:
            raise ValueError(f"{self.name} needs {self._input + self._h} steps, got {len(y)}")
        self._history = History(y)
        with _quiet():
            net = getattr(models, self.model)(
                **dict(cfg.model_options),
                h=self._h,
                input_size=self._input,
                max_steps=cfg.max_steps,
                windows_batch_size=cfg.windows_batch_size,
                learning_rate=cfg.learning_rate,
                scaler_type="standard",
                random_seed=self.seed,
                accelerator="cpu",
                logger=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                enable_checkpointing=False,
            )
            self._nf = library.NeuralForecast(models=[net], freq=1)
            self._nf.fit(_frame(np.asarray(y, dtype=np.float64)), val_size=0)

    def update(self, y_new: FloatArray) -> None:
        self._history.extend(y_new)

    def predict(self, horizon: int) -> FloatArray:
        """Block by block: each block of ``h`` steps is appended as if observed."""
        if self._nf is None:
            raise RuntimeError(f"fit the {self.name} forecaster before predicting")
        context = np.array(self._history.values[-self._input :], dtype=np.float64)
        out: list[FloatArray] = []
        done = 0
        with _quiet():
            while done < horizon:
                block = self._nf.predict(df=_frame(context))[self.model].to_numpy(np.float64)
                out.append(block)
                context = np.concatenate([context, block])[-self._input :]
                done += len(block)
        return np.maximum(np.concatenate(out)[:horizon], 0.0)

    def save(self, folder: Path) -> None:
        if self._nf is None:
            raise RuntimeError(f"fit the {self.name} forecaster before saving it")
        meta = {"model": self.model, "seed": self.seed, "h": self._h, "input": self._input}
        write_state(
            folder, self.name, meta | {"config": asdict(self.config)}, history=self._history.values
        )
        with _quiet():
            self._nf.save(path=str(folder / LIBRARY_FOLDER), save_dataset=False, overwrite=True)

    def load(self, folder: Path) -> None:
        library = import_neuralforecast()
        fields = {"model": str, "seed": int, "h": int, "input": int, "config": dict}
        meta, arrays = read_state(folder, self.name, fields, ("history",))
        try:
            raw = meta["config"] | {
                "model_options": tuple(map(tuple, meta["config"].get("model_options", ())))
            }
            config = DeepConfig(**raw)
            with _quiet():
                nf = library.NeuralForecast.load(path=str(folder / LIBRARY_FOLDER))
        except (OSError, TypeError, KeyError, RuntimeError, ValueError) as exc:
            raise StateError(f"{folder}: cannot load the {self.name} model: {exc}") from None
        self.model, self.seed, self.config, self._nf = meta["model"], meta["seed"], config, nf
        self._h, self._input = meta["h"], meta["input"]
        self._history = History(arrays["history"])


def _frame(y: FloatArray) -> Any:
    """neuralforecast's long format: one series, integer time steps."""
    import pandas as pd

    return pd.DataFrame({"unique_id": "load", "ds": np.arange(len(y)), "y": y})


@contextmanager
def _quiet() -> Iterator[None]:
    """Lightning's banners and warnings off; one torch thread (faster for these small nets on
    a shared machine, and the same result on every run)."""
    import torch

    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [lg.level for lg in loggers]
    threads = torch.get_num_threads()
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.set_num_threads(threads)
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def dlinear(seed: int) -> NeuralForecaster:
    """DLinear (Zeng et al., AAAI 2023): trend and seasonal parts, one linear map each."""
    return NeuralForecaster("DLinear", "dlinear", seed)


def patchtst(seed: int) -> NeuralForecaster:
    """PatchTST (Nie et al., ICLR 2023): a Transformer over patches of the look-back."""
    return NeuralForecaster("PatchTST", "patchtst", seed, PATCHTST)


# PatchTST's defaults (128 hidden, 16 heads, 3 layers) train for minutes on two shared cores;
# this smaller one trains in well under a minute and forecasts these series as well.
PATCHTST = DeepConfig(
    input_days=1.0,
    max_steps=200,
    windows_batch_size=64,
    model_options=(
        ("hidden_size", 32),
        ("n_heads", 4),
        ("encoder_layers", 2),
        ("linear_hidden_size", 64),
    ),
)
