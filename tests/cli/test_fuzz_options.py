"""Hypothesis-drawn bad values for every numeric and path option of every command (bounded).

Each bad value must end in a non-zero exit with a message, no traceback and no file written;
each valid one must parse. ``bench/fuzz_cli.py`` runs the same code with a larger budget.
"""

from __future__ import annotations

import pytest

from tests.cli.fuzzing import TARGETS, Target, fuzz, sandbox

EXAMPLES = 4  # per option (bench/fuzz_cli.py runs 150)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_bad_values_are_refused_clearly_and_valid_ones_parse(target: Target) -> None:
    with sandbox() as root:
        tally = fuzz(target, EXAMPLES, root)
    assert tally.tried == EXAMPLES
    assert tally.clear + tally.accepted == tally.tried, tally.failures
    assert (tally.tracebacks, tally.wrongly, tally.refused_valid) == (0, 0, 0)
