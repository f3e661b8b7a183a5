"""The live dashboard under load: time to interactive and the page's memory over a soak.

    python bench/ui_soak.py [--nodes 1000] [--pods 10000] [--seconds 120] [--rate 2]

A ``twinsched twin serve`` subprocess on 127.0.0.1 holds ``--nodes`` nodes and ``--pods``
pods (half running); Debian's Chromium (Playwright) opens ``/ui`` while a thread PATCHes the
twin ``--rate`` times a second (a pod bound, the previous released, a metric sample).
Prints: time to interactive (navigation start to the first frame drawn), frames received,
the page's JS heap after a forced GC at the start and the end of the soak. The browser test
(tests/twin/test_ui_browser.py) is the same measurement with a few seconds of soak.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

import httpx

# the launchers live with the tests; run from anywhere, they are found from the repo root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from playwright.sync_api import sync_playwright
from tests.twin.browser import big_document, launch, soak
from tests.twin.process import running_twin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--rate", type=float, default=2.0, help="PATCHes per second")
    args = parser.parse_args()
    token = secrets.token_hex(16)
    doc = big_document(args.nodes, args.pods)
    pending = [p["id"] for job in doc["jobs"] for p in job["pods"]
               if p["phase"] == "Pending" and not p["requests"]["gpu_count"]]  # fmt: skip
    nodes = [n["id"] for pool in doc["nodepools"] for n in pool["nodes"]]
    with tempfile.TemporaryDirectory() as folder, running_twin(Path(folder), token) as twin:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        body = json.dumps(doc).encode()
        httpx.put(f"{twin.url}/api/v1/state", content=body, headers=headers, timeout=120)
        with sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_context(bypass_csp=True).new_page()
            started = time.monotonic()
            figures = soak(page, twin.url, token, pending, nodes, args.seconds, rate=args.rate)
            elapsed = time.monotonic() - started
            browser.close()
    print(f"cluster: {args.nodes} nodes, {args.pods} pods; soak {args.seconds:g} s at "
          f"{args.rate:g} PATCH/s; load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"time to interactive: {figures['interactive_s'] * 1000:.0f} ms")
    frames, heap = figures["frames"], figures
    print(f"frames: {frames} in {args.seconds:g} s ({frames / args.seconds:.2f}/s); "
          f"patches sent {figures['patches']}")  # fmt: skip
    print(f"JS heap after GC: {heap['heap_start_mb']:.2f} MB at start, "
          f"{heap['heap_end_mb']:.2f} MB at end ({heap['heap_growth_mb']:+.2f} MB)")  # fmt: skip
    print(f"wall time {elapsed:.1f} s")


if __name__ == "__main__":
    main()
