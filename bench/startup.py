"""Whole-process cost of ``twinsched run``: CPU (user + sys) and peak RSS, old code against new.

    python bench/startup.py --old /tmp/old-main/src [--repeat 5] [--variant default]

Each repetition runs the old and the new sources in turn (alternating, so load from other
work falls on both), with and without ``--out`` (writing plots and the HTML report), one
core each (``taskset -c 0``), and prints the medians. The new code's trace cache is filled
by a first, unmeasured run; the old code has none. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

NEW = Path(__file__).resolve().parents[1] / "src"


# A fresh parent per measurement, so that RUSAGE_CHILDREN holds that one process only.
_TIMER = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True, capture_output=True, timeout=600)\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
)


def measure(src: Path, args: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak MiB) of one ``python -m twinsched.cli ARGS`` with ``src`` first."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = ["taskset", "-c", "0", sys.executable, "-m", "twinsched.cli", *args]
    done = subprocess.run([sys.executable, "-c", _TIMER, *command], env=env, check=True,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    cpu, peak_kib = done.stdout.split()
    return float(cpu), int(peak_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="src folder of the old code")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--variant", default="default")
    parser.add_argument("--scheduler", default="fgd")
    opts = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="startup-"))
    base = ["run", "--trace", "alibaba-gpu-2023", "--variant", opts.variant,
            "--schedulers", opts.scheduler, "--seeds", "0", "--no-record"]  # fmt: skip
    cases = {"no --out": base, "--out": [*base, "--out", str(out)]}
    measure(NEW, base)  # fills the trace cache
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(opts.repeat):
        for case, args in cases.items():
            for code, src in (("old", opts.old), ("new", NEW)):
                figures.setdefault((case, code), []).append(measure(src, args))
    for (case, code), runs in figures.items():
        cpu = statistics.median(c for c, _ in runs)
        peak = statistics.median(m for _, m in runs)
        print(f"{case:9} {code}: CPU {cpu:.2f} s, peak {peak:.0f} MiB (medians of {len(runs)})")


if __name__ == "__main__":
    main()
