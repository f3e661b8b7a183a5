"""Fuzz the model registry: malformed ``card.json`` files, scanned and listed.

    PYTHONPATH=src:. python bench/fuzz_cards.py [--examples 2000]

Hypothesis rewrites one model's card (see ``tests/scheduling/ai/card_fuzzing.py``) beside a
good model, then scans the registry and runs ``twinsched models list``. Prints the Markdown
row of the reliability table (``docs/reliability.md``). ``tests/scheduling/ai/test_card_fuzz.py``
runs the same code with a small budget. Not part of the test suite.
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
from tests.scheduling.ai.card_fuzzing import Tally, check, corrupt_cards, registry_with_victim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="cards to try")
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
    print("\n".join(HEADER))
    print(tally.row("model registry: `card.json` (scan, `models list`)"))
    print(f"\n{time.perf_counter() - start:.0f} s; first failures: {tally.failures or 'none'}")
    return 1 if tally.wrongly or tally.tracebacks else 0


if __name__ == "__main__":
    raise SystemExit(main())
