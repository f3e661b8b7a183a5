"""Fuzzing every importer and payload reader with malformed input, and counting the outcomes.

Shared by ``tests/traces/test_fuzz_readers.py`` (a small budget) and ``bench/fuzz_importers.py``
(a large one). Each target turns one Hypothesis-drawn input into an outcome:

- ``clear``: a :class:`~twinsched.errors.TwinschedError` whose message names the file (or, for
  a payload, the field);
- ``accepted``: a scenario (or twin document) whose every value keeps the accepted ranges;
- ``wrongly``: a result with a value out of range (must never happen);
- ``tracebacks``: any other exception, or an error that names no file (must never happen).

Warnings count as exceptions (the test suite runs with ``-W error``).
"""

from __future__ import annotations

import gzip
import tempfile
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fuzz_table
from twinsched.errors import TraceFormatError, TwinschedError
from twinsched.model.cluster import Scenario
from twinsched.model.ranges import scenario_problem


@dataclass
class Tally(fuzz_table.Tally):
    """The counts of one importer or reader target (no HTTP here: 5xx stays 0)."""

    target: str = ""


def outcome_of(run: Callable[[], Any], where: str, case: str, min_nodes: int) -> tuple[str, str]:
    """Run one case; ``where`` must appear in a clear error's message (file or field);
    a scenario with fewer than ``min_nodes`` nodes is wrong (a stored one needs a node)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = run()
    except TwinschedError as exc:
        if where in str(exc) and (not isinstance(exc, TraceFormatError) or exc.field):
            return "clear", ""
        return "tracebacks", f"{case}\n  error names no {where!r}: {exc}"
    except Exception:
        return "tracebacks", f"{case}\n{traceback.format_exc(limit=-3)}"
    scenarios = result if isinstance(result, list) else [result]
    for scenario in scenarios:
        problem = scenario_problem(scenario, min_nodes) if isinstance(scenario, Scenario) else None
        if problem is not None:
            return "wrongly", f"{case}\n  accepted with {problem}"
    return "accepted", ""


# -- hostile values ------------------------------------------------------------------------------
HOSTILE_TEXT = (
    "", " ", "inf", "-inf", "nan", "1e30", "1e300", "-1e300", "-1", "-7", "0", "5000", "1.7",
    "99999999999999999999", "9" * 400, "1e999", "abc", "0x1F", "1_000", "\u00bd", "\x00",
    "\u00e9", '"', "[", "['a'", "[]", "['']", "1=-5", "2=-1", "1002=-1", "1=1e30", "1=x",
    "=3", "1002=5000", "18446744073709551616", "-9223372036854775809",
)  # fmt: skip


def hostile_text() -> st.SearchStrategy[str]:
    """Cell values that break naive parsers, plus numbers and text Hypothesis makes up."""
    return st.one_of(
        st.sampled_from(HOSTILE_TEXT),
        st.integers(-(2**70), 2**70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=12),
    )


def hostile_json() -> st.SearchStrategy[Any]:
    """JSON values that break naive readers."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.sampled_from([1e300, -1e300, 5e-324, 2**63, -(2**63) - 1, 10**30, -1, 5000, 0]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(HOSTILE_TEXT),
        st.text(max_size=8),
    )
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=4)


# -- file mutations -------------------------------------------------------------------------------
Table = list[list[str]]  # header first


def render(table: Table, sep: str = ",") -> str:
    return "\n".join(sep.join(_quote(c, sep) for c in row) for row in table) + "\n"


def _quote(cell: str, sep: str) -> str:
    if sep == "," and any(ch in cell for ch in ',"\n\r'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


@st.composite
def mutated_table(draw: st.DrawFn, table: Table) -> Table:
    """1-3 cells of the table's data rows replaced by hostile values."""
    out = [list(row) for row in table]
    for _ in range(draw(st.integers(1, 3))):
        row = draw(st.integers(1, len(out) - 1))
        col = draw(st.integers(0, len(out[row]) - 1))
        out[row][col] = draw(hostile_text())
    return out


STRUCTURAL = (
    "empty",
    "header only",
    "drop a column",
    "extra cell",
    "bad bytes",
    "truncated",
    "duplicate row",
    "bare CR",
)


@st.composite
def damaged_bytes(draw: st.DrawFn, table: Table, sep: str = ",") -> bytes:
    """The table's file: cells mutated, or the file itself damaged."""
    kind = draw(st.sampled_from(("cells", "cells", "cells", *STRUCTURAL)))
    if kind == "cells":
        return render(draw(mutated_table(table)), sep).encode()
    text = render(table, sep)
    if kind == "empty":
        return b""
    if kind == "header only":
        return render(table[:1], sep).encode()
    if kind == "drop a column":
        col = draw(st.integers(0, len(table[0]) - 1))
        return render([r[:col] + r[col + 1 :] for r in table], sep).encode()
    if kind == "extra cell":
        return render([*table[:-1], [*table[-1], "x"]], sep).encode()
    if kind == "bad bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at].encode() + b"\xff\xfe\xc3" + text[at:].encode()
    if kind == "bare CR":
        at = draw(st.integers(0, len(text)))
        return (text[:at] + "\r" + text[at:].replace("\n", "\r", 1)).encode()
    if kind == "truncated":
        return text.encode()[: draw(st.integers(0, len(text) - 1))]
    return render([*table, table[-1]], sep).encode()


def gzipped(data: bytes, truncate: float | None) -> bytes:
    packed = gzip.compress(data)
    return packed if truncate is None else packed[: int(len(packed) * truncate)]


# -- running a target ------------------------------------------------------------------------------


Made = tuple[Callable[[], Any], str, str, int]  # run, where, case, min_nodes


def fuzz(
    name: str, strategy: st.SearchStrategy[Any], make: Callable[[Any, Path], Made], examples: int
) -> Tally:
    """Draw ``examples`` inputs from ``strategy``; ``make(input, folder)`` writes the files
    and returns (run, where, case description, min_nodes) for :func:`outcome_of`."""
    tally = Tally(target=name)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def one(drawn: Any) -> None:
        with tempfile.TemporaryDirectory() as folder:
            tally.add(*outcome_of(*make(drawn, Path(folder))))

    one()
    return tally
