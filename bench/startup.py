"""Whole-process CPU (user + sys) and peak RSS of ``twinsched run``, two checkouts side by side.

    git worktree add --detach /tmp/old-main main
    python bench/startup.py --old /tmp/old-main [--repeat 7] [--cases recorded,no-record,out]

One FGD fill-up of openb ``default`` (``twinsched run --trace alibaba-gpu-2023 --variant
default --schedulers fgd --seeds 0``), as a user runs it, in three cases: ``recorded`` (the
default: the run goes into the store, here a fresh SQLite file per checkout), ``no-record``
(``--no-record``) and ``out`` (``--out DIR``: results, CSV, the PNG plots and the HTML
report; not recorded). Each repetition runs every case on the old and the new code in turn,
the order flipped every other repetition (so load from other work falls on both), on one core
(``taskset -c CPU``), and the figures are the medians (CPU also the best). Before measuring,
each checkout runs each case once: its bytecode is compiled (``PYTHONPYCACHEPREFIX`` in a
temporary folder, as an installed package has it), its trace cache filled and its store
migrated. CPU and peak RSS come from ``os.wait4`` on the child, and the CPU spent outside the
fill-up (start-up, loading, report, store) from its own clock around ``run_fillup``. The
``out`` case's ``results.json`` of both checkouts must be equal, wall times aside. Not part
of the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

NEW = Path(__file__).resolve().parents[1]
RUN = ["run", "--trace", "alibaba-gpu-2023", "--variant", "default", "--schedulers", "fgd",
       "--seeds", "0"]  # fmt: skip
CASES = ("recorded", "no-record", "out")
_VOLATILE = ("wall_seconds", "timings")  # differ between any two runs
# ``python -m twinsched.cli``, with the fill-up's own CPU time told on stderr at exit, so that
# what the process spends outside it (start-up, loading, report, store) is seen apart from
# the scheduling, whose CPU time the machine's load spreads most.
_CHILD = """
import atexit, sys, time
import twinsched.sim as sim
run, spent = sim.run_fillup, [0.0]
def timed(*args, **kwargs):
    start = time.process_time()
    try:
        return run(*args, **kwargs)
    finally:
        spent[0] += time.process_time() - start
sim.run_fillup = timed
atexit.register(lambda: print(f"\\nFILLUP_CPU {spent[0]:.6f}", file=sys.stderr))
from twinsched.cli import app
app(prog_name="twinsched")
"""


def src_of(checkout: Path) -> Path:
    """The folder to put first on ``PYTHONPATH``: ``CHECKOUT/src``, or ``checkout`` itself."""
    return checkout / "src" if (checkout / "src" / "twinsched").is_dir() else checkout


def case_args(case: str, out: Path) -> list[str]:
    if case == "no-record":
        return [*RUN, "--no-record"]
    if case == "out":
        return [*RUN, "--no-record", "--out", str(out)]
    return RUN


def environment(code: str, src: Path, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {
        "PYTHONPATH": str(src),
        "PYTHONPYCACHEPREFIX": str(tmp / "pyc"),  # per source path: the checkouts never mix
        "TWINSCHED_CACHE": str(tmp / f"cache-{code}"),
        "TWINSCHED_DB": str(tmp / f"{code}.db"),
    }
    return env


def measure(args: list[str], env: dict[str, str], cpu: int) -> tuple[float, float, float]:
    """(CPU seconds, of which outside the fill-up, peak MiB) of one ``twinsched ARGS``, from
    ``os.wait4``."""
    command = ["taskset", "-c", str(cpu), sys.executable, "-c", _CHILD, *args]
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        told = errors.read().decode(errors="replace")
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({child.returncode}):\n{told[-2000:]}")
    total = usage.ru_utime + usage.ru_stime
    fillup = float(told.rsplit("FILLUP_CPU ", 1)[1].split()[0])
    return total, total - fillup, usage.ru_maxrss / 1024  # Linux: KiB


def results_of(out: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads((out / "results.json").read_text())["runs"]
    return [{k: v for k, v in run.items() if k not in _VOLATILE} for run in runs]


def side_by_side_parser(doc: str, cases: tuple[str, ...], repeat: int) -> argparse.ArgumentParser:
    """The options of a two-checkout comparison: --old, --new, --repeat, --cases."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="old checkout (or its src)")
    parser.add_argument("--new", type=Path, default=NEW, help="new checkout (default: this)")
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--cases", default=",".join(cases), help=f"some of {', '.join(cases)}")
    return parser


def chosen_cases(parser: argparse.ArgumentParser, given: str, cases: tuple[str, ...]) -> list[str]:
    """The cases of ``--cases``; an unknown one is an error naming the known ones."""
    chosen = [c for c in given.split(",") if c]
    if unknown := sorted(set(chosen) - set(cases)):
        parser.error(f"unknown case(s) {', '.join(unknown)}: choose from {', '.join(cases)}")
    return chosen


def main() -> None:
    parser = side_by_side_parser(__doc__, CASES, 7)
    parser.add_argument("--cpu", type=int, default=0, help="the core every run is pinned to")
    opts = parser.parse_args()
    cases = chosen_cases(parser, opts.cases, CASES)
    tmp = Path(tempfile.mkdtemp(prefix="startup-"))
    codes = {"old": src_of(opts.old.resolve()), "new": src_of(opts.new.resolve())}
    envs = {code: environment(code, src, tmp) for code, src in codes.items()}
    outs = {code: tmp / f"out-{code}" for code in codes}
    for code in codes:  # warm-up: bytecode, trace cache, store migrated
        for case in cases:
            measure(case_args(case, outs[code]), envs[code], opts.cpu)
    if "out" in cases and results_of(outs["old"]) != results_of(outs["new"]):
        raise SystemExit(f"results differ: {outs['old']} and {outs['new']} (results.json)")
    figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in range(opts.repeat):
        for case in cases:
            for code in ("old", "new") if r % 2 == 0 else ("new", "old"):
                got = measure(case_args(case, outs[code]), envs[code], opts.cpu)
                figures.setdefault((case, code), []).append(got)
    print(f"old: {codes['old']}\nnew: {codes['new']}\ncore {opts.cpu}, medians of {opts.repeat}")
    head = ("case", "CPU s old", "new", "best old", "new", "outside old", "new", "MiB old", "new")
    print(f"{head[0]:10}" + "".join(f"{h:>12}" for h in head[1:]))
    for case in cases:
        runs = figures[(case, "old")], figures[(case, "new")]
        cpu = [statistics.median(r[0] for r in code) for code in runs]
        best = [min(r[0] for r in code) for code in runs]
        outside = [statistics.median(r[1] for r in code) for code in runs]
        mib = [statistics.median(r[2] for r in code) for code in runs]
        row = [f"{x:12.2f}" for x in (*cpu, *best, *outside)] + [f"{x:12.0f}" for x in mib]
        print(f"{case:10}" + "".join(row))
    if "out" in cases:
        print("results.json of old and new equal (wall times aside)")


if __name__ == "__main__":
    main()
