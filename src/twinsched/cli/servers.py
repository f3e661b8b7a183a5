"""What the long-running servers (``twin serve``, ``scheduler serve``) do to their process."""

from __future__ import annotations

import gc


def quiet_gc() -> None:
    """Fewer full garbage collections: call once the server's start-up state is built.

    What exists then (a restored twin document, the scheduler's tables and workload) is
    frozen, never scanned again, and the first threshold is raised: a request that decodes
    a large body (a twin document, a ``v1.NodeList`` of 5,000 nodes) no longer sets off
    collections that walk everything alive and stall the requests in flight (the p99).
    """
    gc.collect()
    gc.freeze()
    first, _, _ = gc.get_threshold()
    gc.set_threshold(max(first, 50_000), 20, 100)
