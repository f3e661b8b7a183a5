"""Hostile requests to the scheduler service (and schemathesis' cases), a bounded budget:
no 5xx, no exception out of the app, no refused bind that changed a binding, invariants held
after every request (the service's too: ``validate=True``), no acknowledged bind dropped by
the node updates interleaved with the binds, no request over 1 s; and damaged journals at
start: a clear error naming file and line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from tests.fuzz_table import Tally
from tests.serve.fuzz_classes import fuzz_journal
from tests.serve.fuzzing import fuzz

REQUESTS = 300
JOURNALS = 75  # bench/fuzz_serve.py replays 1,000


def test_hostile_requests_get_4xx_and_leave_the_state_sound() -> None:
    report = fuzz(REQUESTS)
    assert report.bad() == 0, report.examples[:5]
    total = sum(t.tried for t in report.tallies.values())
    assert total >= REQUESTS - 20
    assert report.statuses[400] > 30 and report.statuses[200] > 30, report.statuses
    assert report.tallies["POST /nodes"].tried >= 10  # node updates interleaved (19-40 drawn)


def test_damaged_journals_stop_the_start_with_a_clear_error(tmp_path: Path) -> None:
    tally = Tally()
    fuzz_journal(JOURNALS, tmp_path, tally)
    assert tally.tried >= JOURNALS - 10 and tally.clear > JOURNALS // 2
    assert tally.wrongly == tally.tracebacks == 0, tally.failures
