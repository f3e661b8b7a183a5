"""What an explanation of one decision holds, as plain frozen records (JSON-ready by
:meth:`Explanation.to_dict`); nothing here computes a score."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Candidate:
    """One eligible node in the explained ranking: its score terms (``name*weight`` -> the
    weighted value), their ``total`` (what the scheduler maximises), and ``rank``: the
    node's place in the run's per-seed tie-break order (lowest wins a tie)."""

    node: int
    name: str
    total: int
    terms: dict[str, int]
    rank: int


@dataclass(frozen=True)
class FilterResult:
    """How many nodes passed every filter, how many each reason removed (the first filter
    that rejects a node, in the filters' reporting order), and the verdict on named nodes."""

    nodes: int
    eligible: int
    removed: dict[str, int]
    named: dict[str, str]  # node name -> "eligible" or the reason that removed it


@dataclass(frozen=True)
class Counterfactual:
    """What binding the pod on ``node`` instead of the chosen node would have left: the
    state one step later on both, and the change (``to`` minus ``chosen``) of each figure."""

    node: str
    valid: str  # "" when the pod may go there, else why not (nothing else is filled then)
    chosen: dict[str, float] = field(default_factory=dict)
    to: dict[str, float] = field(default_factory=dict)
    delta: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Explanation:
    """Why pod ``pod`` went where it went (or nowhere).

    ``ranking`` is ranked by ``ranking_by`` (the scheduler's own score, or the fallback's
    when the scheduler has none); ``moved_by`` is empty when the chosen node is the top of
    that ranking, else what put another node first (a tie-break, the fallback, a vote, a
    rollout, the model, a random draw, a window optimum). ``parts`` carries a composite's
    or a learned model's own part (votes and weights, the bandit's arm and context, the
    reranker's change to FGD's order, the look-ahead's rollout values).
    """

    pod: int
    pod_name: str
    scheduler: str
    decided_by: str  # who bound it: the scheduler, or the fallback
    chosen: int | None
    chosen_name: str | None
    gpus: tuple[int, ...]
    reason: str  # why it was not placed ("" when it was)
    filters: FilterResult
    ranking_by: str
    ranking: tuple[Candidate, ...]
    runner_up: Candidate | None
    margin: int | None  # chosen total minus runner-up total
    tie_break: str
    fallback: str
    moved_by: str
    parts: dict[str, Any] = field(default_factory=dict)
    counterfactual: Counterfactual | None = None
    source: str = ""  # how the state was reproduced (e.g. the run and its event position)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (tuples become lists)."""
        return asdict(self)

    @property
    def top(self) -> int | None:
        """The first node of the ranking (None when nothing is eligible)."""
        return self.ranking[0].node if self.ranking else None
