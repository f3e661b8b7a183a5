"""The filter result and the ranked candidates of one pod, read through the controller's
public steps (``eligible``, ``rejections``, ``scores``); the score terms of a sum come from
its plugins' own pure ``score`` functions, weighted and normalised as the sum does."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from twinsched.model.cluster import I64
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.explain.record import Candidate, FilterResult
from twinsched.scheduling.framework import PodView, Scheduler, ScoringScheduler
from twinsched.scheduling.plugin_scheduler import PluginScheduler

ELIGIBLE = "eligible"


def filter_result(control: SchedulerController, index: int, named: Sequence[int]) -> FilterResult:
    """Nodes that pass every filter, nodes removed per reason, and the verdict on ``named``."""
    pod = control.views[index]
    mask = control.eligible(pod)
    failed = np.flatnonzero(~mask)
    reasons = control.rejections(index, failed)
    removed = Counter(str(r) for r in reasons if r is not None)
    verdict = {
        int(n): str(r) if r is not None else ELIGIBLE
        for n, r in zip(failed.tolist(), reasons, strict=True)
    }
    names = control.state.nodes.names
    on = {names[n]: ELIGIBLE if mask[n] else verdict[n] for n in named}
    return FilterResult(int(mask.size), int(mask.sum()), dict(removed), on)


def ranker(control: SchedulerController) -> Scheduler | None:
    """Whose scores :meth:`SchedulerController.scores` reads: the scheduler's, else the
    fallback's (None when neither scores)."""
    for rater in (control.scheduler, control.fallback):
        if isinstance(rater, ScoringScheduler):
            return rater
    return None


def term_scores(
    rater: Scheduler, control: SchedulerController, pod: PodView, nodes: I64
) -> dict[str, I64]:
    """Per term of ``rater``'s score, its weighted values on ``nodes`` (every eligible node:
    a sum normalises a term over them). A scorer that is not a sum of plugins is one term."""
    state = control.state
    if not isinstance(rater, PluginScheduler):
        assert isinstance(rater, ScoringScheduler)
        return {rater.name: rater.node_scores(state, pod, _mask(state.nodes.n, nodes))[nodes]}
    terms: dict[str, I64] = {}
    many = len(rater.plugins) > 1
    for plugin, weight in rater.plugins:
        values = plugin.score(state, pod, nodes).values
        if plugin.normalizes and many:
            values = plugin.normalize(values)
        label = plugin.name if weight == 1 else f"{plugin.name}*{weight}"
        while label in terms:  # the same plugin twice (``labels+labels``): keep both
            label += "'"
        terms[label] = weight * values
    return terms


def _mask(n: int, nodes: I64) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[nodes] = True
    return mask


def ranked(
    control: SchedulerController, index: int, top: int, extra: Sequence[int] = ()
) -> tuple[str, list[Candidate]]:
    """Who ranks, and the ``top`` best eligible nodes (score, then the per-seed tie-break
    rank), plus the nodes of ``extra`` that are eligible wherever they rank."""
    rater = ranker(control)
    scores = control.scores(index)
    if rater is None or scores is None:
        return "", []
    pod = control.views[index]
    nodes = np.flatnonzero(control.eligible(pod))
    rank = control.ctx.node_rank
    order = nodes[np.lexsort((rank[nodes], -scores[nodes]))]
    keep = [int(n) for n in order[:top]]
    passing = set(nodes.tolist())
    keep += [n for n in extra if n not in keep and n in passing]
    terms = term_scores(rater, control, pod, nodes)
    where = np.searchsorted(nodes, np.asarray(keep, dtype=np.int64))
    names = control.state.nodes.names
    out = [
        Candidate(n, names[n], int(scores[n]), {t: int(v[w]) for t, v in terms.items()},
                  int(rank[n]))
        for n, w in zip(keep, where.tolist(), strict=True)
    ]  # fmt: skip
    return rater.name, out
