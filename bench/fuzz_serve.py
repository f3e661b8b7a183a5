"""Fuzz the scheduler service's HTTP API with a large budget and print the issue-16 rows, one
per endpoint (method and path).

    PYTHONPATH=src:. python bench/fuzz_serve.py [--examples 3000] [--twin]

The requests and the counting are those of ``tests/serve/fuzzing.py`` (the test suite runs
them with a small budget): schemathesis' valid and invalid cases from the OpenAPI plus
hostile bodies (bad quantities, overflow, NUL and huge names, deep nesting, not JSON, binds
of unknown pods, ``NodeNames`` lists placed where the request reader looks for them by
their bytes). ``--twin``: the service reads its nodes and running pods from a real twin
process and writes its binds there (``POST /nodes`` answers 409). Issue 31's classes are
among the hostile bodies (node updates interleaved with the binds, pods selecting huge or
many labels; the service checks its invariants after every change, acknowledged binds must
stay bound, a request over 1 s is a hang), and ``--journals N`` damaged ``--state``
journals are replayed at start. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from tests.serve.fuzz_classes import fuzz_journal
from tests.serve.fuzzing import fuzz, twin_source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3000, help="requests")
    parser.add_argument("--twin", action="store_true", help="state from a twin process")
    parser.add_argument("--journals", type=int, default=1000, help="damaged journals")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.twin:
        with tempfile.TemporaryDirectory() as folder, twin_source(Path(folder)) as source:
            report = fuzz(args.examples, derandomize=False, twin=source)
    else:
        report = fuzz(args.examples, derandomize=False)
    with tempfile.TemporaryDirectory() as folder:
        tally = report.tally("--state journal replay")
        fuzz_journal(args.journals, Path(folder), tally)
        report.examples += tally.failures
    print("\n".join(report.table()))
    tried = sum(t.tried for t in report.tallies.values())
    codes = dict(sorted(report.statuses.items()))
    print(f"\n{tried} requests in {time.perf_counter() - started:.0f} s; status codes: {codes}")
    print(f"answers that took more than 1 s of CPU (hangs): {dict(report.hangs) or 0}")
    print(
        f"answers after more than 1 s of wall time only (waiting for a core): "
        f"{dict(report.late) or 0}"
    )
    print(f"first failures: {report.examples[:5] or 'none'}")
    return 1 if report.bad() else 0


if __name__ == "__main__":
    raise SystemExit(main())
