"""The training flow over services (``twinsched flow run``), with real processes: the twin,
the aggregator (learner + evaluator), the controller and the VTE's feeder, each its own
process; every pod fed is bound once, the rewards the evaluator computed from the twin's
binds reach the learner, and everything is torn down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.twin.flow.learner import Learner, reward_curve
from twinsched.twin.flow.service import choose

PODS = 120


def test_flow_run_binds_every_pod_once_and_rewards_reach_the_learner(tmp_path: Path) -> None:
    out = tmp_path / "flow"
    args = ["flow", "run", "--out", str(out), "--pods", str(PODS), "--schedulers",
            "fgd,bestfit", "--idle", "2"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{PODS}/{PODS} pods bound" in result.output and "binds/s" in result.output
    summary = json.loads((out / "summary.json").read_text())
    fed, learner, evaluator = summary["feeder"], summary["learner"], summary["evaluator"]
    assert fed["pods"] == fed["arrived"] == fed["bound"] == PODS
    # the controller wrote exactly one bind per pod, and the twin accepted each once
    assert summary["controller"]["binds"] == evaluator["binds"] == PODS
    assert 0 < fed["finished"] <= PODS
    # rewards flowed back: every bound choice was scored from the twin's changes
    assert learner["chosen"] >= PODS and learner["open"] == 0
    assert learner["rewarded"] == evaluator["scored"] == PODS
    counts = learner["arm_counts"]
    assert set(counts) == {"fgd", "bestfit"} and sum(counts.values()) == PODS
    assert all(r <= 0 for r in learner["reward_curve"]) and len(learner["reward_curve"]) == 10
    assert summary["binds_per_s"] > 0 and 0 < evaluator["peak_allocation"] <= 1
    codes = summary["exit_codes"]
    assert codes["feeder"] == codes["controller"] == codes["aggregator"] == 0
    assert codes["twin"] in (0, -15)  # uvicorn re-raises SIGTERM after its graceful shutdown
    for name in ("twin", "aggregator", "controller", "feeder"):
        assert (out / f"{name}.log").exists()
    assert "pods bound in" in (out / "controller.log").read_text()


def test_flow_run_refuses_an_unknown_scheduler_before_starting_anything(tmp_path: Path) -> None:
    out = tmp_path / "flow"
    result = CliRunner().invoke(
        app, ["flow", "run", "--out", str(out), "--schedulers", "fgd,nosuch"]
    )
    assert result.exit_code == 2 and "nosuch" in result.output
    assert not out.exists()


def test_learner_takes_rewards_only_for_open_choices() -> None:
    learner = Learner(["fgd", "bestfit"], seed=3)
    arm = learner.choose("pod-a", 0)
    assert learner.reward("pod-b", -1.0) is False  # never chosen: no reward
    assert learner.reward("pod-a", -0.5) is True
    assert learner.reward("pod-a", -0.5) is False  # a choice is rewarded once
    stats = learner.stats()
    assert stats["arm_counts"][learner.members[arm]] == 1 and stats["rewarded"] == 1
    assert stats["mean_reward"] == -0.5 and stats["open"] == 0
    with pytest.raises(TwinschedError, match=r"context must be in 0\.\.7"):
        learner.choose("pod-c", 8)
    with pytest.raises(TwinschedError, match="at least one member"):
        Learner([])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{", "not JSON"),
        (b"[]", "must be an object"),
        (b'{"context": 0}', "'pod' must be"),
        (b'{"pod": "p", "context": "1"}', "'context' must be an integer in 0..7"),
        (b'{"pod": "p", "context": true}', "'context' must be an integer"),
        (b'{"pod": "p", "context": -1}', "context must be in 0..7"),
    ],
)
def test_choose_names_what_is_wrong_with_a_body(body: bytes, message: str) -> None:
    with pytest.raises(TwinschedError, match=message):
        choose(Learner(["fgd", "bestfit"]), body)


def test_reward_curve_is_the_mean_of_equal_slices() -> None:
    assert reward_curve([]) == []
    assert reward_curve([-1.0, 0.0, -0.5, -0.5], points=2) == [-0.5, -0.5]
    assert len(reward_curve([-0.1] * 3)) == 3


def test_the_aggregator_service_answers_4xx_to_bad_requests() -> None:
    import http.client

    from twinsched.twin.client import TwinClient
    from twinsched.twin.flow.evaluator import Evaluator
    from twinsched.twin.flow.service import serve

    learner = Learner(["fgd", "bestfit"])
    with TwinClient("http://127.0.0.1:9") as client:  # never called: the evaluator not started
        server = serve(learner, Evaluator(client, learner))
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)

    def ask(method: str, path: str, body: bytes | None = None) -> tuple[int, dict[str, object]]:
        conn.request(method, path, body)
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    try:
        assert ask("POST", "/choose", b'{"pod": "p", "context": 99}')[0] == 400
        assert ask("POST", "/choose", b"")[0] == 400
        assert ask("POST", "/nowhere", b"{}")[0] == 404
        assert ask("GET", "/nowhere")[0] == 404
        status, answer = ask("POST", "/choose", b'{"pod": "p", "context": 1}')
        assert status == 200 and answer["member"] in ("fgd", "bestfit")
        status, health = ask("GET", "/healthz")
        assert status == 200 and health["learner"]["open"] == 1  # type: ignore[index]
        conn.putrequest("POST", "/choose")
        conn.putheader("Content-Length", "10000000")
        conn.endheaders()
        assert conn.getresponse().status == 413
    finally:
        conn.close()
        server.shutdown()
        server.server_close()
