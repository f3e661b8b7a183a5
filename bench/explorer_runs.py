"""How long the run explorer's listing takes over many stored runs (issue 38: 100,000 runs
stay fast).

    python bench/explorer_runs.py [--runs 100000] [--db sqlite|postgresql://...]

Stores ``--runs`` runs straight into a fresh store (``tests/explorer/seeding.py``: one
needle scheduler among them), then times ``store.run_query.query_runs`` for what the page
asks: the first page, a facet that finds the needle, a text search, a sort on a metric and
the last page, each the median of 5, in CPU and wall ms (the facets' counts included). Not
part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from tests.explorer.seeding import NEEDLE, seed_runs

from twinsched.store.run_query import RunQuery, query_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--db", default="sqlite", help="sqlite (a temporary file) or a URL")
    args = parser.parse_args()
    url = args.db
    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp(prefix='explorer-bench-')}/store.db"
    started = time.perf_counter()
    seed_runs(url, args.runs)
    print(
        f"{args.runs:,} runs stored in {time.perf_counter() - started:.1f} s ({url.split(':')[0]})"
    )
    cases = {
        "first page": RunQuery(),
        "facet: the needle": RunQuery({"scheduler": NEEDLE}),
        "text: 'needle'": RunQuery(text="needle"),
        "sort: energy, asc": RunQuery(sort="energy_kwh", descending=False),
        "last page": RunQuery(offset=args.runs - 50),
    }
    query_runs(RunQuery(limit=1), url)  # the engine, once
    print(f"{'query':<20} {'cpu ms':>8} {'wall ms':>8} {'total':>8}")
    for name, query in cases.items():
        cpu, wall = [], []
        for _ in range(5):
            c0, w0 = time.process_time(), time.perf_counter()
            page = query_runs(query, url)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
        cpu_ms, wall_ms = statistics.median(cpu), statistics.median(wall)
        print(f"{name:<20} {cpu_ms:8.1f} {wall_ms:8.1f} {page.total:8,}")


if __name__ == "__main__":
    main()
