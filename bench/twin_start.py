"""A twin's start-up, two checkouts side by side: CPU (user + sys) and peak RSS.

Three cases, each alternated old/new (medians of ``--repeat``): ``import`` (``from
twinsched.twin.api.app import create_app``), ``create`` (that import and ``create_app`` on a
new SQLite file) and ``ready`` (``twinsched twin serve`` from ``Popen`` until ``/healthz``
answers, through ``tests/twin/process.py`` of the same checkout: the twin's CPU then, and the
CPU the waiting process spent). One cache folder per checkout, warmed first (bytecode, the
store template). Not part of the suite.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

NEW = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(NEW))  # bench.startup, run as a script
from bench.startup import chosen_cases, side_by_side_parser  # noqa: E402

CREATE = """
import sys
from twinsched.twin.api.app import create_app
from twinsched.twin.core.settings import TwinSettings
create_app(TwinSettings.from_env(token="x" * 32, db=sys.argv[1], dev=None,
                                 read_token_required=None))
"""
READY = """
import json, os, sys, time
from pathlib import Path
from tests.twin.process import TwinProcess
folder = Path(sys.argv[1])
twin = TwinProcess(f"sqlite:///{folder / 'twin.db'}", "x" * 32, folder / "twin.log")
start = time.process_time()
twin.wait_ready()
waited = time.process_time() - start
fields = Path(f"/proc/{twin.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
print(json.dumps([(int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), waited]))
twin.stop()
"""
CASES = ("import", "create", "ready")


def run(case: str, root: Path, cache: Path) -> tuple[float, float]:
    """(CPU seconds, peak MiB) of ``case``; for ``ready``, (the twin's CPU, the waiter's)."""
    folder = Path(tempfile.mkdtemp(prefix="twin-start-"))
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}",
           "TWINSCHED_CACHE": str(cache)}  # fmt: skip
    if case == "ready":
        done = subprocess.run([sys.executable, "-c", READY, str(folder)], cwd=root, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
        twin, waited = json.loads(done.stdout.split("\n")[-2])
        return twin, waited
    code = CREATE if case == "create" else CREATE.split("from twinsched.twin.core")[0]
    child = subprocess.Popen([sys.executable, "-c", code, f"sqlite:///{folder / 't.db'}"],
                             cwd=root, env=env)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{case} failed in {root}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = side_by_side_parser(__doc__, CASES, 5)
    opts = parser.parse_args()
    cases = chosen_cases(parser, opts.cases, CASES)
    roots = {"old": opts.old.resolve(), "new": opts.new.resolve()}
    tmp = Path(tempfile.mkdtemp(prefix="twin-start-"))
    for code, root in roots.items():  # warm-up
        run("create", root, tmp / code)
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for r in range(opts.repeat):
        for case in cases:
            for code in ("old", "new") if r % 2 == 0 else ("new", "old"):
                got.setdefault((case, code), []).append(run(case, roots[code], tmp / code))
    print(f"old: {roots['old']}\nnew: {roots['new']}\nmedians of {opts.repeat}")
    print(f"{'case':8}{'CPU s old':>12}{'new':>8}{'best old':>10}{'new':>8}"
          f"{'MiB / waiter CPU s old':>24}{'new':>8}")  # fmt: skip
    for case in cases:
        old, new = got[(case, "old")], got[(case, "new")]
        med = [statistics.median(x[i] for x in side) for i in (0, 1) for side in (old, new)]
        best = [min(x[0] for x in side) for side in (old, new)]
        print(
            f"{case:8}{med[0]:12.2f}{med[1]:8.2f}{best[0]:10.2f}{best[1]:8.2f}"
            f"{med[2]:24.2f}{med[3]:8.2f}"
        )


if __name__ == "__main__":
    main()
