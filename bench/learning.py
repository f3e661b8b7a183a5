"""LSTM training time on the training week, and autoscaling simulator speed.

    python bench/learning.py [--trace nasa-http-1995] [--repeats 3]

Prints the median (best) LSTM fit on the first week at 5-minute resolution (the budget the
autoscaler uses) and simulated one-minute slots per second for ``reactive``. Not part of the
test suite.
"""

from __future__ import annotations

import argparse
import statistics
import time

from twinsched.learning.autoscale import ServiceConfig, make_policy, simulate
from twinsched.learning.forecasters.lstm import LSTMForecaster
from twinsched.learning.series import fill_gaps, load_series, resample


def lstm_fit_seconds(trace: str) -> tuple[float, float]:
    series = resample(load_series(trace), 5)
    train = fill_gaps(series.values[: series.week], series.day)
    model = LSTMForecaster(seed=0)
    started = time.perf_counter()
    model.fit(train, series.day, series.week)
    return time.perf_counter() - started, model.train_loss


def slots_per_second(trace: str) -> float:
    series = load_series(trace)
    train, evaluation = series.split(series.week)
    started = time.perf_counter()
    simulate(make_policy("reactive"), train, evaluation, ServiceConfig(), seed=0)
    return len(evaluation) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="nasa-http-1995")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    fits = [lstm_fit_seconds(args.trace) for _ in range(args.repeats)]
    seconds = [s for s, _ in fits]
    print(
        f"LSTM fit on week 1 of {args.trace}: median {statistics.median(seconds):.1f} s "
        f"(best {min(seconds):.1f} s), final loss {fits[0][1]:.4f}"
    )
    rates = [slots_per_second(args.trace) for _ in range(args.repeats)]
    print(f"simulator, reactive: median {statistics.median(rates):,.0f} slots/s")


if __name__ == "__main__":
    main()
