"""Fuzz every importer and payload reader with Hypothesis-made malformed input (issue 16).

    PYTHONPATH=src:. python bench/fuzz_importers.py [--examples 2000] [--only swf]

The same targets and counting as ``tests/traces/test_fuzz_readers.py`` (which runs them with a
small budget), with a longer one. What a file importer accepts is also written to a SQLite
store and read back, and the scenario read back is what "stored wrongly" counts: a value out
of the accepted ranges (``docs/store.md``). Prints one Markdown row per target in the column
order of the table in ``docs/reliability.md``; a payload reader has no 5xx of its own (the
twin's ``POST /harmonize`` is fuzzed over HTTP by ``tests/twin/test_fuzz.py``), so its column
is 0. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fuzz_table import HEADER
from tests.traces.fuzz_targets import targets
from tests.traces.fuzzing import Made, fuzz

from twinsched.model.cluster import Scenario
from twinsched.store import load_scenario, save_scenarios
from twinsched.store.db import dispose


def stored(make: Callable[[Any, Path], Made], db: str) -> Callable[[Any, Path], Made]:
    """``make`` whose accepted scenarios go through the store: saved, then loaded back."""

    def through_store(drawn: Any, folder: Path) -> Made:
        run, where, case, min_nodes = make(drawn, folder)

        def run_and_store() -> Any:
            result = run()
            if not isinstance(result, list) or not all(isinstance(s, Scenario) for s in result):
                return result
            named = [replace(s, name=f"fuzz-{k}") for k, s in enumerate(result)]
            save_scenarios(named, source="fuzz", db=db, replace=True)
            return [load_scenario(s.name, db) for s in named]

        return run_and_store, where, case, min_nodes

    return through_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=2000, help="inputs per target")
    parser.add_argument("--only", action="append", default=[], help="targets containing this")
    parser.add_argument("--failures", action="store_true", help="print the failing cases")
    args = parser.parse_args()
    if args.examples < 1:
        parser.error("--examples must be >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{Path(tmp) / 'fuzz.db'}"
        print("\n".join(HEADER))
        start = time.perf_counter()
        for name, (strategy, make) in targets().items():
            if args.only and not any(o in name for o in args.only):
                continue
            tally = fuzz(name, strategy, stored(make, db), args.examples)
            print(tally.row(tally.target), flush=True)
            if args.failures:
                for failure in tally.failures:
                    print("    " + failure.replace("\n", "\n    "), file=sys.stderr)
        dispose(db)
    print(f"\n{args.examples} examples per target, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
