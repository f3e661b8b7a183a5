"""Fuzz the twin's HTTP API with a large budget and print the issue-16 table, one row per
endpoint (method and path), on SQLite and, with ``--pg``, on PostgreSQL.

    python bench/fuzz_twin.py [--examples 20000] [--pg postgresql://postgres@127.0.0.1/test]
    python bench/fuzz_twin.py --predict [--examples 300]

The requests and the counting are those of ``tests/twin/fuzzing.py`` (the test suite runs
them with a small budget): schemathesis' valid and invalid cases from the OpenAPI plus
hostile requests (deep nesting, NUL and over-long ids, numbers as ``true`` or ``"100"``,
batches from the past, CSV with bare carriage returns, absurd steps). Answers that break
the OpenAPI are listed after the table (0 expected). ``--predict`` fuzzes instead the
predictive twin's routes on a twin trained from three days of samples
(``tests/twin/fuzz_predict.py``): ``--examples`` pairs of requests. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import psycopg
from tests.twin.conftest import TOKEN, make_client
from tests.twin.fuzz_predict import fuzz_predict, trained_twin
from tests.twin.fuzzing import Report, fuzz

from twinsched.store.db import dispose
from twinsched.twin.api.app import close_app, create_app
from twinsched.twin.core.settings import TwinSettings


def run(url: str, examples: int) -> Report:
    config = TwinSettings(token=TOKEN, db=url, max_body_bytes=1 << 20)
    make_client(config).close()  # migrate first
    app = create_app(config)
    try:
        return fuzz(app, examples)
    finally:
        close_app(app)
        dispose(url)


def on_postgresql(base: str, examples: int) -> Report:
    """In a schema of its own, dropped afterwards."""
    schema = f"fuzz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        url = base.replace("postgresql://", "postgresql+psycopg://", 1)
        return run(f"{url}?options=-csearch_path%3D{schema}", examples)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def on_trained_predictor(examples: int) -> Report:
    with tempfile.TemporaryDirectory() as folder:
        client = trained_twin(Path(folder))
        try:
            return fuzz_predict(client, examples)
        finally:
            client.close()  # gives the app's history back


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20_000, help="requests per database")
    parser.add_argument("--pg", default="", help="also fuzz on this PostgreSQL database")
    parser.add_argument("--predict", action="store_true", help="the trained predictor's routes")
    args = parser.parse_args()
    reports: list[tuple[str, Report, float]] = []
    if args.predict:
        started = time.perf_counter()
        report = on_trained_predictor(args.examples)
        reports.append(("trained predictor", report, time.perf_counter() - started))
    else:
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            report = run(f"sqlite:///{folder}/fuzz.db", args.examples)
            reports.append(("SQLite", report, time.perf_counter() - started))
    if args.pg and not args.predict:
        started = time.perf_counter()
        report = on_postgresql(args.pg, args.examples)
        reports.append(("PostgreSQL", report, time.perf_counter() - started))
    for name, report, seconds in reports:
        print(f"\n{name}: {report.total().tried} requests in {seconds:.0f} s\n")
        print("\n".join(report.table(f" ({name})")))
        broken = {t: n.violations for t, n in report.tallies.items() if n.violations}
        print(f"\nschema violations: {sum(broken.values())} {broken or ''}".rstrip())
        print(f"status codes: {dict(sorted(report.statuses.items()))}")


if __name__ == "__main__":
    main()
