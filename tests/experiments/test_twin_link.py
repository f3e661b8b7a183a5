"""TwinLink (issue 32, item 6): what a run through a twin needs travels with the call, not in
the environment; it pickles (a Ray worker on another host gets it), hides its token, and the
injected anomalies' labels come back in the result."""

from __future__ import annotations

import pickle

import pytest

from twinsched.errors import TwinschedError
from twinsched.experiments.runner import TwinLink, execute
from twinsched.model.run import RunResult, RunSpec
from twinsched.sim.anomalies import AnomalySpec


def test_a_link_pickles_and_never_shows_its_token() -> None:
    link = TwinLink("http://127.0.0.1:9", "s3cret-token-value", "nats://127.0.0.1:4222/x",
                    AnomalySpec(rate=0.1))  # fmt: skip
    assert pickle.loads(pickle.dumps(link)) == link
    assert "s3cret" not in repr(link)


def test_the_link_must_be_for_the_spec_s_twin() -> None:
    spec = RunSpec("synthetic-continuum", "fgd", 0, "3", twin="http://127.0.0.1:9")
    with pytest.raises(TwinschedError, match="the twin link is for http://elsewhere"):
        execute(spec, link=TwinLink("http://elsewhere"))


def test_labels_stay_out_of_the_results_json() -> None:
    result = RunResult("fgd", 0, "t", "replay", 0.0, [], anomaly_labels=[(1.0, "n", "spike")])
    assert "anomaly_labels" not in result.to_dict()
