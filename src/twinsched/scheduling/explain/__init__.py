"""Every decision explained, on demand, from the state the decision saw (issue 42).

Nothing here runs while a run decides: an explanation is computed afterwards on a
controller that holds the state the decision saw (rebuilt from the run's event log by
``experiments/explain.py``, or a copy of a live state), through the controller's public
steps. ``docs/explain.md`` shows what an explanation holds.
"""

from twinsched.scheduling.explain.decision import Recorded, explain_decision, explain_on_state
from twinsched.scheduling.explain.record import Candidate, Counterfactual, Explanation, FilterResult
from twinsched.scheduling.explain.whatif import counterfactual

__all__ = [
    "Candidate",
    "Counterfactual",
    "Explanation",
    "FilterResult",
    "Recorded",
    "counterfactual",
    "explain_decision",
    "explain_on_state",
]
