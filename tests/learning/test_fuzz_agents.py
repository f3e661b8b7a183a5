"""Hypothesis-drawn hostile agent files (bounded budget): ``agent check`` and ``agent run``
never give a traceback, never hang, and agree (a file check accepts runs for its whole
``--duration``; one it refuses, run refuses with the same message). ``bench/fuzz_agents.py``
runs the same code with a larger budget."""

from __future__ import annotations

from pathlib import Path

from tests.learning.agent_fuzzing import fuzz

EXAMPLES = 20  # bench/fuzz_agents.py runs more


def test_hostile_agent_files_are_refused_clearly_by_check_and_run_alike(tmp_path: Path) -> None:
    tally = fuzz(EXAMPLES, tmp_path)
    assert tally.tried == EXAMPLES
    assert (tally.tracebacks, tally.hangs, tally.disagree) == (0, 0, 0), tally.failures
    assert tally.clear + tally.accepted == tally.tried
    assert tally.clear > 0
