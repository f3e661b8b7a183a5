"""Transfers of a workflow run over shared links: bandwidth divided, never over-committed.

The link model of the replay (``sim/transfers.py``) for a workflow through the controller
(:mod:`twinsched.workflows.orchestrate`): a *flow* moves one data set from a nodepool (a
tier) to another, or inside one over the pool's own network, on the direct link between
them (a link carries both directions). Bandwidth is a fluid shared resource: every flow on
a link gets ``bandwidth / flows on the link``, so a link never carries more than it has
(:meth:`LinkFlows.check`, after every change under ``validate``). Rates change only when a
flow starts or ends; :meth:`LinkFlows.advance` brings every flow's progress up to date.
A flow is named by its key (the orchestration's ``(data set, tier)``).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from twinsched.errors import InvariantError
from twinsched.model.cluster import F64

Link = tuple[int, int]  # tiers (a, b) with a <= b
_DONE_S = 1e-9  # seconds of transfer left below which a flow has ended (float rounding)


@dataclass
class _Flow:
    link: Link
    left: float
    rate: float = 0.0


class LinkFlows:
    """The flows in progress over tier-to-tier links of ``bandwidth_bytes_s`` (T x T)."""

    def __init__(self, bandwidth_bytes_s: F64, validate: bool = False) -> None:
        self.bandwidth = np.asarray(bandwidth_bytes_s, dtype=np.float64)
        self.validate = validate
        self.flows: dict[Hashable, _Flow] = {}
        self.now = 0.0
        self.moved = 0.0  # bytes moved so far, over all flows

    def __contains__(self, key: Hashable) -> bool:
        return key in self.flows

    def start(self, key: Hashable, src: int, dst: int, size: float, now: float) -> None:
        """A flow of ``size`` bytes from tier ``src`` to tier ``dst`` begins at ``now``."""
        self.advance(now)
        self.flows[key] = _Flow((min(src, dst), max(src, dst)), float(size))
        self._rates()

    def advance(self, now: float) -> None:
        """Every flow's progress up to ``now``."""
        dt = now - self.now
        if dt > 0:
            for flow in self.flows.values():
                step = min(flow.left, flow.rate * dt)
                flow.left -= step
                self.moved += step
        self.now = max(self.now, now)

    def finished(self, now: float) -> list[Hashable]:
        """Advance to ``now``; the keys of the flows that ended (removed, rates updated)."""
        self.advance(now)
        done = [key for key, f in self.flows.items() if f.left <= 1e-6 + f.rate * _DONE_S]
        for key in done:
            self.moved += self.flows.pop(key).left
        if done:
            self._rates()
        return done

    def next_end(self) -> float:
        """When the next flow ends at the current rates (``inf``: none moves)."""
        ends = [f.left / f.rate for f in self.flows.values() if f.rate > 0]
        return self.now + min(ends) if ends else float("inf")

    def _rates(self) -> None:
        count: dict[Link, int] = {}
        for flow in self.flows.values():
            count[flow.link] = count.get(flow.link, 0) + 1
        for flow in self.flows.values():
            flow.rate = float(self.bandwidth[flow.link]) / count[flow.link]
        if self.validate:
            self.check()

    def load(self, link: Link) -> float:
        """Bytes per second the flows on ``link`` carry now."""
        return sum(f.rate for f in self.flows.values() if f.link == link)

    def check(self) -> None:
        """Raise :class:`InvariantError` when a link carries more than its bandwidth."""
        for link in {f.link for f in self.flows.values()}:
            cap = float(self.bandwidth[link])
            if self.load(link) > cap * (1.0 + 1e-9):
                raise InvariantError(
                    f"link {link}: flows carry {self.load(link):.6g} B/s over {cap:.6g} B/s"
                )
