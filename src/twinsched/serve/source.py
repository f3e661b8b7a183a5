"""Where the scheduler service's cluster state lives when it does not keep it itself.

:class:`StateSource` is what :class:`~twinsched.serve.cluster.ServiceCluster` asks before a
filter call and tells of each bind; :class:`~twinsched.serve.twin_source.TwinSource` (the
twin, ``serve --twin URL``) implements it.
"""

from __future__ import annotations

from typing import Protocol

from twinsched.serve.convert import NodeRow, PodRow

Running = dict[str, tuple[PodRow, str, tuple[int, ...]]]  # pod key -> (pod, node, GPUs)


class StateSource(Protocol):
    """Where the cluster's state lives when the service does not keep it (the twin:
    :class:`~twinsched.serve.twin_source.TwinSource`)."""

    def fetch(self, force: bool = False) -> tuple[list[NodeRow], Running] | None:
        """Nodes and running pods if they may have changed since the last fetch, else None."""
        ...

    def bind(
        self, row: PodRow, node: str, gpus: tuple[int, ...], by: tuple[str, bool] | None = None
    ) -> str:
        """Record the bind there first (``by``: the scheduler that chose the node and whether
        it was the fallback): "" or why it was refused."""
        ...

    def release(self, key: str) -> None:
        """The pod ended."""
        ...

    def disagreement_counts(self) -> dict[str, int]:
        """What the source said that the service's state could not take, counted per kind
        (the twin: :data:`~twinsched.model.mirror.KINDS`)."""
        ...
