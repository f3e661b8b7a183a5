"""Fuzz the model registry: malformed ``card.json`` files, and hostile weights.

    PYTHONPATH=src:. python bench/fuzz_cards.py [--examples 2000] [--weights 500]

Hypothesis rewrites one model's card (see ``tests/scheduling/ai/card_fuzzing.py``) beside a
good model, then scans the registry and runs ``twinsched models list``; then it writes
hostile weights (tampered with a recomputed card, NaN or inf, a deep or huge header, random
bytes, a cardless user version; ``tests/scheduling/ai/weights_fuzzing.py``) and loads them as
``ai:NAME``. Prints the Markdown rows of the reliability table (``docs/reliability.md``).
``tests/scheduling/ai/test_card_fuzz.py`` and ``test_weights_fuzz.py`` run the same code with
a small budget. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz_table import HEADER
from tests.scheduling.ai import weights_fuzzing
from tests.scheduling.ai.card_fuzzing import Tally, check, corrupt_cards, registry_with_victim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="cards to try")
    parser.add_argument("--weights", type=int, default=500, help="hostile weights to try")
    args = parser.parse_args()
    tally = Tally()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _, _, card = registry_with_victim(root / "template")

        @settings(
            max_examples=args.examples, database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            check(data.draw(corrupt_cards(card)), root / "models", tally)

        run()
    weights = _weights(args.weights)
    print("\n".join(HEADER))
    print(tally.row("model registry: `card.json` (scan, `models list`)"))
    print(weights.row("model registry: hostile weights (load as `ai:NAME`, `models verify`)"))
    failures = tally.failures + weights.failures
    print(f"\n{time.perf_counter() - start:.0f} s; first failures: {failures or 'none'}")
    bad = tally.wrongly + tally.tracebacks + weights.wrongly + weights.tracebacks
    return 1 if bad else 0


def _weights(examples: int) -> Tally:
    tally = Tally()
    with tempfile.TemporaryDirectory() as folder:

        @settings(
            max_examples=examples, database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(drawn=weights_fuzzing.hostile_models())
        def run(drawn: tuple[str, int, float, int]) -> None:
            weights_fuzzing.check(drawn, Path(folder) / "models", tally)

        run()
    return tally


if __name__ == "__main__":
    raise SystemExit(main())
