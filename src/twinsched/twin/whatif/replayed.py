"""A replay stopped at a time, and its state as the twin would hold it: what the accuracy
and speed benches fork, and what the tests put into a twin."""

from __future__ import annotations

from twinsched.model.cluster import Scenario
from twinsched.model.convert import scenario_to_document
from twinsched.model.document import TwinDocument
from twinsched.sim.replay import ReplayRun


class PausedReplay(ReplayRun):
    """A replay that can be advanced to a time and shown as a twin document."""

    def advance(self, until: float) -> None:
        """Handle every event up to ``until`` (inclusive)."""
        self.engine.run(self._handle, until=until)

    def document(self, at: float) -> TwinDocument:
        """The state as a twin document at time ``at``, running pods with their start."""
        doc = scenario_to_document(self.scenario, self.state, timestamp=at)
        index = {name: i for i, name in enumerate(self.pods.names)}
        for job in doc.jobs:
            for pod in job.pods:
                if pod.phase == "Running":
                    pod.timestamps.start_s = float(self.start_t[index[pod.id]])
        return doc


def replay_document(scenario: Scenario, scheduler: str, seed: int, at: float) -> TwinDocument:
    """``scenario`` replayed with ``scheduler`` up to ``at``, as a twin document."""
    run = PausedReplay(scenario, scheduler, seed)
    run.advance(at)
    return run.document(at)
