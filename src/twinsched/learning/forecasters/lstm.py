"""An LSTM forecaster in PyTorch, with closed-loop and open-loop forecasting.

The network reads, at step t, the scaled load ``x_t``, the load one day before the step it
predicts (``x_{t+1-day}``), the mean load of the last day (the level) and the time of day of
the step it predicts (sine, cosine), and outputs ``x_{t+1}``. It is trained one step ahead
with teacher forcing on random slices of the training series. Series are assumed to start
at midnight (both traces do).

* **closed loop** (``predict``): after a warm-up over recent observations, each prediction is
  fed back as the next input, for any horizon.
* **open loop** (``predict_open_loop``): every input is a real observation, so it gives the
  one-step-ahead forecasts along a known continuation.

torch is imported only here, and only when a model is fitted or used.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from twinsched.extras import install_hint, require
from twinsched.learning.forecasters.base import History, StateError, read_state, write_state
from twinsched.learning.series import FloatArray

if TYPE_CHECKING:
    import torch

WHY = "the LSTM forecaster needs PyTorch"
INSTALL_HINT = install_hint(WHY, "learning")


def import_torch() -> Any:
    """torch, or an ImportError that names the extra to install."""
    return require("torch", "learning", WHY)


@contextmanager
def one_thread(torch: Any) -> Iterator[None]:
    """Small recurrent nets run several times faster on one thread than on two."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class LSTMConfig:
    """Training budget and shape; the defaults train in well under a minute on 2 cores."""

    hidden: int = 32
    seq_len: int = 96
    batch: int = 32
    steps: int = 600
    lr: float = 0.01
    warmup: int = 96
    max_seconds: float = 100.0


class LSTMForecaster:
    """One-layer LSTM, trained one step ahead; forecasts closed loop or open loop."""

    name = "lstm"

    def __init__(self, seed: int = 0, config: LSTMConfig | None = None) -> None:
        self.seed = seed
        self.config = config or LSTMConfig()
        self.train_seconds = 0.0
        self.train_loss = float("nan")
        self._history = History(np.zeros(0))
        self._day = 0
        self._scale = 1.0
        self._net: Any = None

    # --- protocol -------------------------------------------------------------------------

    def fit(self, y: FloatArray, day: int, week: int) -> None:
        torch = import_torch()
        cfg = self.config
        if len(y) < day + cfg.seq_len + 1:
            raise ValueError(f"lstm needs {day + cfg.seq_len + 1} steps, got {len(y)}")
        self._day = day
        self._scale = float(np.mean(y)) or 1.0
        self._history = History(y)
        feats, targets = self._features(np.asarray(y, dtype=np.float64), start=day)
        started = time.perf_counter()
        with one_thread(torch), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self._net = _make_net(torch, cfg.hidden)
            self.train_loss = _train(torch, self._net, feats, targets, cfg, self.seed)
        self.train_seconds = time.perf_counter() - started

    def update(self, y_new: FloatArray) -> None:
        self._history.extend(y_new)

    def predict(self, horizon: int) -> FloatArray:
        """Closed loop: each prediction becomes the next input."""
        self._require_fitted()
        torch = import_torch()
        hist = self._history.values
        n = len(hist)
        x = hist / self._scale
        with one_thread(torch), torch.no_grad():
            state = self._warm_up(torch, x, n)
            last = float(x[-1])
            out = np.empty(horizon, dtype=np.float64)
            ext = np.concatenate([x, np.zeros(horizon)])
            for h in range(horizon):
                t = n - 1 + h  # input step; predicts step t + 1
                ext[t] = last
                inp = torch.tensor(_rows(ext, np.array([t]), self._day)[None], dtype=torch.float32)
                y_hat, state = self._step(inp, state)
                last = float(y_hat[0, -1, 0])
                out[h] = last
        return np.maximum(out * self._scale, 0.0)

    def predict_open_loop(self, y_next: FloatArray) -> FloatArray:
        """Open loop: one-step-ahead forecasts of each step of ``y_next``, fed the real values.

        Element i forecasts ``y_next[i]`` from observations up to ``y_next[i-1]``. The
        forecaster's history does not change.
        """
        self._require_fitted()
        torch = import_torch()
        hist = self._history.values
        n = len(hist)
        full = np.concatenate([hist, np.asarray(y_next, dtype=np.float64)]) / self._scale
        with one_thread(torch), torch.no_grad():
            state = self._warm_up(torch, full, n)
            steps = np.arange(n - 1, n - 1 + len(y_next))
            inp = self._inputs(torch, full, steps)
            y_hat, _ = self._net_forward(inp, state)
        one_step = np.asarray(y_hat[0, :, 0].numpy(), dtype=np.float64)
        return np.maximum(one_step * self._scale, 0.0)

    def save(self, folder: Path) -> None:
        """``state.json`` (shape, scale, budget), ``arrays.npz`` (history) and the weights as
        a torch ``state_dict`` in ``weights.pt``."""
        self._require_fitted()
        torch = import_torch()
        meta: dict[str, Any] = {"day": self._day, "scale": self._scale, "seed": self.seed}
        meta |= {"config": asdict(self.config), "train_seconds": self.train_seconds}
        write_state(folder, self.name, meta, history=self._history.values)
        lstm, head = self._net
        torch.save({"lstm": lstm.state_dict(), "head": head.state_dict()}, folder / WEIGHTS)

    def load(self, folder: Path) -> None:
        torch = import_torch()
        fields = {"day": int, "scale": float, "seed": int, "config": dict}
        meta, arrays = read_state(folder, self.name, fields, ("history",))
        try:
            config = LSTMConfig(**meta["config"])
            weights = torch.load(folder / WEIGHTS, weights_only=True)
            net = _make_net(torch, config.hidden)
            for part, key in zip(net, ("lstm", "head"), strict=True):
                part.load_state_dict(weights[key])
        except (OSError, TypeError, KeyError, RuntimeError) as exc:
            raise StateError(f"{folder}: cannot load the LSTM weights: {exc}") from None
        self.config, self.seed, self._net = config, meta["seed"], net
        self._day, self._scale = meta["day"], meta["scale"]
        self._history = History(arrays["history"])
        self.train_seconds = float(meta.get("train_seconds", 0.0))

    # --- internals ------------------------------------------------------------------------

    def _features(self, x_raw: FloatArray, start: int) -> tuple[FloatArray, FloatArray]:
        x = x_raw / self._scale
        steps = np.arange(start, len(x) - 1)
        return _rows(x, steps, self._day), x[steps + 1]

    def _inputs(self, torch: Any, x: FloatArray, steps: Any) -> Any:
        return torch.tensor(_rows(x, steps, self._day)[None, :, :], dtype=torch.float32)

    def _warm_up(self, torch: Any, x: FloatArray, n: int) -> Any:
        """LSTM state after reading the ``warmup`` inputs before the last observation."""
        first = max(self._day, n - 1 - self.config.warmup)
        steps = np.arange(first, n - 1)
        if len(steps) == 0:
            return None
        _, state = self._net_forward(self._inputs(torch, x, steps), None)
        return state

    def _step(self, inp: torch.Tensor, state: Any) -> tuple[Any, Any]:
        return self._net_forward(inp, state)

    def _require_fitted(self) -> None:
        if self._net is None:
            raise RuntimeError("fit the LSTM forecaster before predicting")

    def _net_forward(self, inp: Any, state: Any) -> tuple[Any, Any]:
        lstm, head = self._net
        out, state = lstm(inp, state)
        return head(out), state


FEATURES = 5
WEIGHTS = "weights.pt"


def _rows(x: FloatArray, steps: Any, day: int) -> FloatArray:
    """Inputs at each step t (which predicts t + 1): the load at t, the load one day before
    t + 1, the mean load of the day up to t (the level) and the time of day of t + 1."""
    steps = np.asarray(steps)
    sums = np.concatenate([[0.0], np.cumsum(x[: int(steps.max()) + 1])])
    level = (sums[steps + 1] - sums[np.maximum(steps + 1 - day, 0)]) / day
    lag = x[steps + 1 - day]
    return np.stack([x[steps], lag, level, *_phase(steps + 1, day)], axis=1).astype(np.float64)


def _phase(step: Any, day: int) -> tuple[Any, Any]:
    angle = 2.0 * np.pi * (np.asarray(step) % day) / day
    return np.sin(angle), np.cos(angle)


def _make_net(torch: Any, hidden: int) -> tuple[Any, Any]:
    lstm = torch.nn.LSTM(input_size=FEATURES, hidden_size=hidden, batch_first=True)
    head = torch.nn.Linear(hidden, 1)
    return lstm, head


def _train(
    torch: Any,
    net: tuple[Any, Any],
    feats: FloatArray,
    targets: FloatArray,
    cfg: LSTMConfig,
    seed: int,
) -> float:
    lstm, head = net
    params = list(lstm.parameters()) + list(head.parameters())
    optimiser = torch.optim.Adam(params, lr=cfg.lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=cfg.steps)
    x_all = torch.tensor(feats, dtype=torch.float32)
    y_all = torch.tensor(targets, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    span = len(targets) - cfg.seq_len
    offsets = np.arange(cfg.seq_len)
    deadline = time.perf_counter() + cfg.max_seconds
    loss_value = float("nan")
    for _ in range(cfg.steps):
        starts = rng.integers(0, span + 1, size=cfg.batch)
        index = torch.from_numpy(starts[:, None] + offsets[None, :])
        out, _ = lstm(x_all[index])
        loss = torch.nn.functional.mse_loss(head(out)[:, :, 0], y_all[index])
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimiser.step()
        schedule.step()
        loss_value = loss.item()
        if time.perf_counter() > deadline:
            break
    return loss_value


def lstm(seed: int) -> LSTMForecaster:
    """A new LSTM forecaster; torch is imported on the first fit."""
    return LSTMForecaster(seed)
