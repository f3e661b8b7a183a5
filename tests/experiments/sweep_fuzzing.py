"""Hostile sweep names and trace variants (issue 31, class 8).

Hypothesis draws names (path pieces, dots, NUL and other control characters, non-ASCII,
blanks, up to 300 characters) and ``trace/variant`` strings (known traces with any text after
the slash). A sweep spec must refuse each with a :class:`SweepSpecError` naming the key
("clear") or accept it only when it follows the grammar (``docs/sweeps.md``) and its variant
is one the trace knows ("accepted"); anything else accepted is "stored wrongly". ``sweep
report NAME`` on an empty store must end with a one-line error (exit 1 or 2), no traceback,
and write nothing. Shared by ``tests/experiments/test_sweep_fuzz.py`` (small budget) and
``bench/fuzz_cli.py`` (its sweep rows in ``docs/reliability.md``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hypothesis import strategies as st
from typer.testing import CliRunner

from tests import fuzz_table
from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.experiments.sweep import SweepSpecError, parse_spec
from twinsched.traces.registry import check_variant, split_trace

GRAMMAR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
TRACES = ("synthetic-continuum", "synthetic-cluster", "alibaba-gpu-2023")
PIECES = ["..", ".", "/", "\x00", "\n", "\u202e", "\u200b", "é", " ", "-", "_", "a", "7", "out"]
runner = CliRunner()
Tally = fuzz_table.Tally

names = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join),
    st.text(max_size=80),
    st.from_regex(GRAMMAR, fullmatch=True),
    st.integers(60, 300).map(lambda n: "x" * n),
)
variants = st.one_of(
    st.lists(st.sampled_from([*PIECES, "0", "00", "1", "default", "cpu050", "9" * 11]),
             max_size=6).map("".join),
    st.integers(-5, 2**33).map(str),
    st.text(max_size=20),
)  # fmt: skip


def check_name(name: str, tally: Tally) -> None:
    """One name through a spec: refused naming the key, or accepted only by the grammar."""
    grid = {"traces": ["synthetic-continuum"], "schedulers": ["random"]}
    try:
        parse_spec({"name": name, **grid})
    except SweepSpecError as exc:
        ok = "key 'name'" in str(exc) and not GRAMMAR.fullmatch(name)
        tally.add("clear" if ok else "wrongly", f"name {name!r:.80} refused: {exc!s:.100}")
    except Exception as exc:
        tally.add("tracebacks", f"name {name!r:.80}: {exc!r:.120}")
    else:
        good = bool(GRAMMAR.fullmatch(name))
        tally.add("accepted" if good else "wrongly", f"name {name!r:.80} accepted")


def check_trace(trace: str, tally: Tally) -> None:
    """One ``trace/variant`` through a spec: refused, or accepted only if the trace knows it."""
    try:
        spec = parse_spec({"name": "v", "traces": [trace], "schedulers": ["random"]})
    except SweepSpecError as exc:
        tally.add("clear" if "known:" in str(exc) else "wrongly", f"{trace!r:.80}: {exc!s:.100}")
    except Exception as exc:
        tally.add("tracebacks", f"trace {trace!r:.80}: {exc!r:.120}")
    else:
        cell = spec.cells()[0]
        try:
            check_variant(cell.trace, cell.variant)
            same = (cell.trace, cell.variant) == split_trace(trace)
        except TwinschedError:
            same = False
        tally.add("accepted" if same else "wrongly", f"trace {trace!r:.80} accepted")


def check_report(name: str, work: Path, tally: Tally) -> None:
    """``sweep report NAME`` on an empty store: a clean error, nothing written anywhere."""
    db = f"sqlite:///{work.parent / 'fuzz.db'}"
    before = os.getcwd()
    os.chdir(work)
    try:
        result = runner.invoke(app, ["sweep", "report", name, "--db", db])
    finally:
        os.chdir(before)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    if crashed or "Traceback" in result.output:
        tally.add("tracebacks", f"report {name!r:.80}: {result.exception!r:.120}")
    elif result.exit_code in (1, 2) and not any(work.iterdir()):
        tally.add("clear")
    else:
        tally.add("wrongly", f"report {name!r:.80}: {result.exit_code} {list(work.iterdir())}")
