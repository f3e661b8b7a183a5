"""Give the compose stack's twin its cluster: the nodes of a trace, no pods (PUT /api/v1/state).

The twin keeps its state in PostgreSQL and restores it at each start, so this runs once, from
the host, with a twinsched installed there (``pip install 'twinsched[serve]'``):

    python deploy/seed-twin.py --url http://127.0.0.1:8181 [--variant default] [--data DIR]

The write token is $TWINSCHED_TOKEN (the stack's). Prints the twin's new version.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from twinsched.cli.options import load_source, scenario_source
from twinsched.model.convert import scenario_to_document
from twinsched.twin.client import TwinClient


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8181")
    parser.add_argument("--trace", default="alibaba-gpu-2023")
    parser.add_argument("--variant", default="default")
    parser.add_argument("--data", default=None, help="trace folder (default $TWINSCHED_DATA)")
    args = parser.parse_args()
    token = os.environ.get("TWINSCHED_TOKEN")
    if not token:
        parser.error("set TWINSCHED_TOKEN (the stack's write token)")
    data = Path(args.data) if args.data else None
    scenario = load_source(*scenario_source(args.trace, args.variant, data, None, None))
    nodes_only = replace(scenario, pods=scenario.pods.take(np.zeros(0, dtype=np.int64)))
    with TwinClient(args.url, token) as client:
        version = client.put_state(scenario_to_document(nodes_only))
    print(
        f"twin at {args.url}: {scenario.nodes.n} nodes of {args.trace}/{args.variant}, "
        f"version {version}"
    )


if __name__ == "__main__":
    main()
