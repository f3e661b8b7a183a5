"""Fuzz the ``twinsched`` command line: bad and valid values for every numeric and path option.

    PYTHONPATH=src:. python bench/fuzz_cli.py [--examples 150] [--by-option] [--commands C1,C2]

For each command (one row; ``--by-option``: one row per option) Hypothesis draws values for
each option listed in ``tests/cli/fuzzing.py`` (``TARGETS``, the documented ranges): about
three in four outside the accepted range, run through typer's ``CliRunner`` in a sandbox
folder, and one in four inside it, parsed only. Prints the Markdown rows of the reliability
table (``docs/reliability.md``): a bad value handled with a clear error (non-zero exit, a
message, no traceback, no file written), a valid value accepted, a bad value accepted or
leaving files ("stored wrongly"), tracebacks (and runs past the time limit), 5xx (none: no
HTTP here). ``tests/cli/test_fuzz_options.py`` runs the same code with a small budget. The
default budget takes a few minutes. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cli.fuzzing import TARGETS, Tally, fuzz, sandbox
from tests.experiments import sweep_fuzzing
from tests.fuzz_table import HEADER


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=150, help="values per option")
    parser.add_argument("--by-option", action="store_true", help="one row per option")
    parser.add_argument("--commands", default="", help="only these commands, e.g. train,distil")
    args = parser.parse_args()
    only = {c.strip() for c in args.commands.split(",") if c.strip()}
    targets = [t for t in TARGETS if not only or " ".join(t.command) in only]
    rows: dict[str, Tally] = {}
    start = time.perf_counter()
    for target in targets:
        key = target.name if args.by_option else "twinsched " + " ".join(target.command)
        with sandbox() as root:
            rows.setdefault(key, Tally()).merge(fuzz(target, args.examples, root))
    rows |= _sweeps(args.examples)
    print("\n".join(HEADER))
    total = Tally()
    for key, tally in rows.items():
        print(tally.row(f"`{key}`"))
        total.merge(tally)
    print(total.row("**CLI, all commands**"))
    seconds = time.perf_counter() - start
    print(f"\n{len(targets)} options x {args.examples} values: {seconds:.0f} s", file=sys.stderr)
    problems = [e for t in rows.values() for e in t.failures]
    for problem in problems:
        print("problem:", problem, file=sys.stderr)
    return 1 if problems or total.refused_valid else 0


def _sweeps(examples: int) -> dict[str, Tally]:
    """Hostile sweep names (spec and ``sweep report``) and ``trace/variant`` strings."""
    names, traces = Tally(), Tally()
    with sandbox() as root:
        work = root / "work"
        work.mkdir()

        @settings(
            max_examples=examples, database=None, deadline=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(
            name=sweep_fuzzing.names,
            trace=st.sampled_from(sweep_fuzzing.TRACES),
            variant=sweep_fuzzing.variants,
        )
        def run(name: str, trace: str, variant: str) -> None:
            sweep_fuzzing.check_name(name, names)
            sweep_fuzzing.check_report(name, work, names)
            sweep_fuzzing.check_trace(f"{trace}/{variant}", traces)

        run()
    return {"sweep names (spec, `sweep report`)": names, "sweep `trace/variant`": traces}


if __name__ == "__main__":
    raise SystemExit(main())
