"""Decisions per second of this tree next to another checkout (main's, say), alternating.

    python bench/side_by_side.py --base ../wt-base [--nodes 5000] [--pods 10000]
                                 [--schedulers fgd,bestfit,leastallocated] [--repeat 5]
                                 [--this-bench]

Each run is one child process of ``bench/decisions.py --repeat 1 --clock cpu`` (one core,
CPU time) with ``src/`` of one tree on its path; the two trees take turns, run by run, so
both see the same spells of a shared machine. Prints each tree's median and the ratio.
``--this-bench`` runs this tree's ``decisions.py`` on both trees' ``src/`` (a base older than
its ``--clock`` option).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def one_run(tree: Path, name: str, nodes: int, pods: int, bench: Path | None = None) -> float:
    """Decisions/s of one run of ``name`` with ``tree``'s code (its own decisions.py, or
    ``bench``'s: a checkout older than ``--clock`` has none that this script can run)."""
    env = dict(os.environ, PYTHONPATH=f"{tree / 'src'}:{tree}")
    script = (bench or tree) / "bench" / "decisions.py"
    command = [sys.executable, str(script), "--nodes", str(nodes)]
    command += ["--pods", str(pods), "--schedulers", name, "--repeat", "1", "--clock", "cpu"]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    found = re.search(r"median\s+([\d,]+) decisions/s", out)
    if found is None:
        raise RuntimeError(f"no rate in {out!r}")
    return float(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--schedulers", default="fgd,bestfit,leastallocated")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--this-bench", action="store_true",
        help="run this tree's bench/decisions.py on both trees' src/ (for an older base)",
    )  # fmt: skip
    args = parser.parse_args()
    bench = HERE if args.this_bench else None
    trees = {"base": args.base.resolve(), "this": HERE}
    for name in args.schedulers.split(","):
        rates: dict[str, list[float]] = {label: [] for label in trees}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                rates[label].append(one_run(tree, name, args.nodes, args.pods, bench))
        base, this = (statistics.median(rates[label]) for label in trees)
        print(
            f"{name:16s} base {base:9,.0f}  this {this:9,.0f} decisions/s (medians of "
            f"{args.repeat}, alternating)  x{this / base:.2f}  ({args.nodes} nodes, "
            f"{args.pods} pods)",
            flush=True,
        )


if __name__ == "__main__":
    main()
