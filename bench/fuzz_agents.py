"""Fuzz agent files: ``twinsched agent check`` and ``agent run`` on hostile files.

    PYTHONPATH=src:. python bench/fuzz_agents.py [--examples 500]

Hypothesis draws agent files (``tests/learning/agent_fuzzing.py``: hostile values for every
option, crons that never fire, bad URLs, deep nesting, oversized and non-UTF-8 files, and
some valid files); each goes through ``agent check`` and ``agent run --duration 0.3`` in
process. Prints the Markdown row: tried, clean errors, accepted, tracebacks, hangs (past
10 s, or a run that outlives its duration by 5 s) and check/run disagreements. Every column
but the first three must be 0. ``tests/learning/test_fuzz_agents.py`` runs the same code
with a small budget. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.learning.agent_fuzzing import HEADER, fuzz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="files to try")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="twinsched-fuzz-agents-") as folder:
        tally = fuzz(args.examples, Path(folder))
    print("\n".join(HEADER))
    print(tally.row("`twinsched agent check` / `agent run`"))
    print(f"\n{args.examples} files: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    for problem in tally.failures:
        print("problem:", problem, file=sys.stderr)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
