"""The training flow over services (``twinsched flow run``), with real processes: the twin,
the aggregator (learner + evaluator), the controller and the VTE's feeder, each its own
process; every pod fed is bound once, the rewards the evaluator computed from the twin's
binds reach the learner, and everything is torn down."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.store.bandits import load_posterior, save_posterior
from twinsched.twin.flow.learner import Learner, reward_curve
from twinsched.twin.flow.service import choose

PODS = 120


def test_flow_run_binds_every_pod_once_and_rewards_reach_the_learner(tmp_path: Path) -> None:
    out, db = tmp_path / "flow", str(tmp_path / "store.sqlite")
    args = ["flow", "run", "--out", str(out), "--pods", str(PODS), "--schedulers",
            "fgd,bestfit", "--idle", "2", "--keep", "flow-test", "--db", db]  # fmt: skip
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
    # what the learner learned is kept in the store: every reward, per member as it chose
    kept = summary["kept"]
    assert kept["rewards"] == PODS and kept["writes"] == 1 and kept["per_member"] == counts
    posterior = load_posterior("bandit:fgd|bestfit", "flow-test", "twin", db)
    assert posterior is not None and sum(map(sum, posterior.count)) == PODS
    assert (
        "kept posterior of bandit:fgd|bestfit for flow-test (twin): 0 rewards"
        in (out / "aggregator.log").read_text()
    )


def test_a_flow_session_starts_from_the_kept_posterior_and_adds_to_it(tmp_path: Path) -> None:
    """The deployed bandit goes on learning: a session starts from what was kept for its key
    (here what a learner saw before, as in-process runs or earlier sessions leave it) and
    writes back the sum."""
    db, name = str(tmp_path / "store.sqlite"), "bandit:fgd|bestfit"
    before = Learner(["fgd", "bestfit"], seed=1)
    for i in range(25):
        before.choose(f"p{i}", i % before.contexts)
        before.reward(f"p{i}", -0.01 * (i % 3))
    save_posterior(name, "flow-prior", "fillup", before.posterior(), db)
    pods, out = 40, tmp_path / "flow"
    args = ["flow", "run", "--out", str(out), "--pods", str(pods), "--schedulers", "fgd,bestfit",
            "--idle", "2", "--keep", "flow-prior", "--keep-mode", "fillup", "--db", db]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "kept posterior for flow-prior (fillup): 65 rewards, 2 writes" in result.output
    log = (out / "aggregator.log").read_text()
    assert f"kept posterior of {name} for flow-prior (fillup): 25 rewards" in log
    after = load_posterior(name, "flow-prior", "fillup", db)
    assert after is not None
    first = np.asarray(before.posterior().count)
    added = np.asarray(after.count) - first
    assert added.min() >= 0 and added.sum() == pods  # the earlier counts kept, 40 added


def test_a_bad_kept_key_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out, db = tmp_path / "flow", str(tmp_path / "store.sqlite")
    result = CliRunner().invoke(
        app, ["flow", "run", "--out", str(out), "--keep", "k", "--keep-mode", "no mode", "--db", db]
    )
    assert result.exit_code == 2 and "mode" in result.output
    assert not out.exists()


def test_a_learner_starts_from_a_posterior_and_hands_back_the_sum() -> None:
    learner = Learner(["fgd", "bestfit"], seed=3)
    first = learner.choose("a", 2)
    learner.reward("a", -0.25)
    again = Learner(["fgd", "bestfit"], seed=4)
    again.start_from(learner.posterior())
    arm = again.choose("b", 2)
    again.reward("b", -0.5)
    count = np.asarray(again.posterior().count)
    assert count.sum() == 2 and count[2, first] >= 1 and count[2, arm] >= 1
    assert again.posterior().total[2][arm] == (-0.75 if arm == first else -0.5)
    with pytest.raises(TwinschedError, match=r"kept posterior is for fgd\|bestfit"):
        Learner(["bestfit", "fgd"]).start_from(learner.posterior())


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
