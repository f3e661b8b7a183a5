"""Bytes ``/ui`` sends to one idle tab, this tree against another (e.g. main before the deltas).

    python bench/ui_bytes.py --before /work/wt-opsui-old [--seconds 60] [--target 90]

The cluster is openb ``default`` (1,213 GPU nodes) filled by BestFit to ``--target`` % of its
GPUs (seed 0), as a twin document. For each tree (this one, then ``--before`` when given), a
child process with that tree's sources first on ``PYTHONPATH`` serves the twin's app
(``tests/twin/browser.py``'s ``twin_in_thread``, on a fresh SQLite history), PUTs the
document, and reads ``GET /ui/events`` for ``--seconds`` with nothing changing: the stream's
bytes in all, those after its first frame (what an idle minute costs), and the events by
kind. Prints both trees side by side and the ratio after / before.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TOKEN = "ui-bytes-bench-token-0123456789ab"


def document(target: float) -> bytes:
    """openb default after a BestFit fill-up to ``target`` % of its GPUs, in the twin format."""
    from twinsched.model.convert import scenario_to_document
    from twinsched.sim.fillup import FillupRun
    from twinsched.traces import registry as traces

    scenario = traces.load("alibaba-gpu-2023", "default")
    run = FillupRun(scenario, "bestfit", 0, target_pct=target, track=False)
    while run.cursor < run.pods.n:
        run.step()
    scenario = dataclasses.replace(scenario, pods=run.pods)
    doc = scenario_to_document(scenario, run.state, timestamp=3600.0)
    return doc.model_dump_json(exclude_none=True).encode()


def child(doc_path: Path, seconds: float) -> dict[str, object]:
    """Serve this interpreter's tree, load the document, read the idle stream."""
    import httpx
    from tests.twin.browser import twin_in_thread

    with tempfile.TemporaryDirectory() as folder, twin_in_thread(Path(folder), TOKEN) as url:
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        put = httpx.put(f"{url}/api/v1/state", content=doc_path.read_bytes(), headers=headers,
                        timeout=300)  # fmt: skip
        put.raise_for_status()
        time.sleep(1.0)  # the state settles (nothing changes from now on)
        received: list[tuple[float, int, str]] = []  # (time, bytes, event kind)
        stop = threading.Event()

        def read() -> None:
            kind = ""
            with httpx.Client(timeout=None) as http, http.stream("GET", f"{url}/ui/events") as r:
                try:
                    for line in r.iter_lines():
                        if line.startswith("event: "):
                            kind = line[len("event: ") :]
                        received.append((time.monotonic(), len(line.encode()) + 1, kind))
                        if stop.is_set():
                            return
                except httpx.HTTPError:
                    return  # the server went away at the end

        started = time.monotonic()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(seconds)
        stop.set()
        ended = time.monotonic()
    within = [(t, n, k) for t, n, k in received if t - started <= ended - started]
    first_end = next((t for t, n, k in within if k == "frame" and n == 1), None)  # blank line
    after = sum(n for t, n, _ in within if first_end is not None and t > first_end)
    events = Counter(k for _, n, k in within if n == 1 and k)  # one blank line per event
    return {
        "seconds": round(ended - started, 2),
        "bytes": sum(n for _, n, _ in within),
        "bytes_after_first_frame": after,
        "events": dict(events),
        "load": round(os.getloadavg()[0], 2),
    }


def measure(tree: Path, doc_path: Path, seconds: float) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(doc_path),
         "--seconds", str(seconds)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=seconds + 600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    figures: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    return {"tree": str(tree), "commit": commit, **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another worktree (the code before)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--target", type=float, default=90.0, help="GPU %% filled")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.seconds)))
        return
    sys.path.insert(0, str(HERE / "src"))
    with tempfile.TemporaryDirectory() as folder:
        doc_path = Path(folder) / "openb.json"
        doc_path.write_bytes(document(args.target))
        size = doc_path.stat().st_size
        rows = [("after", measure(HERE, doc_path, args.seconds))]
        if args.before is not None:
            rows.append(("before", measure(args.before.resolve(), doc_path, args.seconds)))
    print(f"openb default, 1,213 nodes, BestFit to {args.target:g} % GPU; document {size:,} B; "
          f"one idle tab on /ui/events for {args.seconds:g} s")  # fmt: skip
    print(
        f"{'':8} {'commit':>9} {'bytes':>11} {'after 1st frame':>16} {'per idle min':>13}  events"
    )
    per_minute = {}
    for name, r in rows:
        idle = float(r["bytes_after_first_frame"])  # type: ignore[arg-type]
        per_minute[name] = idle * 60.0 / float(r["seconds"])  # type: ignore[arg-type]
        print(f"{name:8} {r['commit']:>9} {r['bytes']:>11,} {int(idle):>16,} "
              f"{per_minute[name]:>13,.0f}  {r['events']} (load {r['load']})")  # fmt: skip
    if per_minute.get("before"):
        ratio = 100.0 * per_minute["after"] / per_minute["before"]
        print(f"after / before, bytes per idle minute: {ratio:.3f} %")


if __name__ == "__main__":
    main()
