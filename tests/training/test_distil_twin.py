"""Retraining from a twin session (``distil --from-twin-session``): the session's opening
document and stored bindings replayed, the teacher's values recorded at the states they led
to (DAgger on what the twin saw). Real SQLite histories written through the twin's API."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.builders import scenario, state_with
from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client
from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.model.convert import scenario_to_document
from twinsched.model.events import Arrive, Bind
from twinsched.model.state import ClusterState
from twinsched.store.db import dispose
from twinsched.training.distil.from_twin import load_session, replay_session_job
from twinsched.training.distil.margins import Margins
from twinsched.twin.core.settings import TwinSettings

TEACHER = "lookahead:fgd/c=4/h=8/s=2/a=0"  # rollouts at every contested decision
NODES = [(32_000, 64_000, 4, "A")] * 3 + [(32_000, 64_000, 8, "A")]
PODS = [(1000, 2000, 1, 500), (2000, 4000, 1, 1000), (1000, 1000, 2, 1000)] * 4
BINDS = [("p000", "n0", [0]), ("p001", "n1", [0]), ("p002", "n3", [0, 1]),
         ("p003", "n0", [0]), ("p004", "n2", [1])]  # fmt: skip

Bindings = Sequence[tuple[str, str, list[int]]]


@pytest.fixture
def history_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    yield url
    dispose(url)


def _session(
    url: str, binds: Bindings = BINDS, opening: ClusterState | None = None, **settings: int
) -> None:
    """A twin on ``url`` given the scenario's document (``PUT``: session 1; its phases and
    bindings those of ``opening`` if given), then ``binds`` written one ``PATCH`` each, as a
    scheduler writes them."""
    document = scenario_to_document(scenario(NODES, PODS), opening)
    twin: SyncASGI = make_client(TwinSettings(token=TOKEN, db=url, **settings), document)
    for t, (pod, node, gpus) in enumerate(binds, start=1):
        delta = {"op": "pod", "pod": pod, "phase": "Running", "node": node, "gpus": gpus,
                 "scheduler": "ai:openb-rerank"}  # fmt: skip
        answer = twin.patch("/api/v1/state", json={"time": float(t), "deltas": [delta]},
                            headers=AUTH)  # fmt: skip
        assert answer.status_code == 200, answer.text
    twin.close()


def test_a_session_loads_in_order_and_replays_to_the_teachers_margins(history_url: str) -> None:
    _session(history_url)
    session = load_session(history_url, 1)
    assert [(d.seq, d.pod, d.node, d.gpus) for d in session.decisions] == [
        (k, pod, node, tuple(gpus)) for k, (pod, node, gpus) in enumerate(BINDS, start=1)
    ]
    assert session.record() == {"id": 1, "source": session.source, "decisions": len(BINDS),
                                "changes": len(BINDS)}  # fmt: skip
    assert [p.id for j in session.document.jobs for p in j.pods] == [f"p{i:03d}" for i in
                                                                     range(len(PODS))]  # fmt: skip
    margins = replay_session_job((TEACHER, session))
    assert margins.decisions == len(BINDS)  # every decision compared (a=0, free nodes alike)
    assert margins.group.size > margins.decisions  # several candidates each
    assert margins.label == "twin session 1"
    used = sum(PODS[int(p[1:])][2] * PODS[int(p[1:])][3] for p, _, _ in BINDS)
    assert margins.alloc_pct == pytest.approx(100.0 * used / 20_000)  # the stored bindings
    again = replay_session_job((TEACHER, session))
    assert again.checksum() == margins.checksum()
    assert np.isfinite(margins.placed).all() and np.isfinite(margins.frag).all()


def test_a_session_that_kept_only_its_newest_decisions_replays_from_its_change_log(
    history_url: str,
) -> None:
    """The bindings come from the change log: the decisions the twin dropped are not needed
    (those it kept are checked against it)."""
    one_gpu = [f"p{i:03d}" for i in range(len(PODS)) if PODS[i][2] == 1]  # 8 pods
    binds = [(pod, f"n{k % 4}", [k // 4]) for k, pod in enumerate(one_gpu)]
    _session(history_url, binds, decisions_kept=2)
    session = load_session(history_url, 1)
    assert [d.seq for d in session.decisions][-1] == 8 and len(session.decisions) < 8
    assert session.record()["decisions"] == 8
    assert replay_session_job((TEACHER, session)).decisions == 8


def test_an_unknown_session_or_history_is_refused(history_url: str, tmp_path: Path) -> None:
    _session(history_url)
    with pytest.raises(TwinschedError, match=r"twin session 7 is not in the twin's history "
                                             r"\(sessions: 1\)"):  # fmt: skip
        load_session(history_url, 7)
    missing = tmp_path / "nowhere.db"
    with pytest.raises(TwinschedError, match="no twin history at"):
        load_session(str(missing), 1)
    assert not missing.exists()  # a mistyped path is not created


def test_a_session_without_decisions_is_refused(history_url: str) -> None:
    _session(history_url, [])
    with pytest.raises(TwinschedError, match="twin session 1 has no decisions"):
        load_session(history_url, 1)


def test_a_binding_the_replay_cannot_take_fails_naming_seq_pod_and_node(
    history_url: str,
) -> None:
    """Two whole-GPU pods on one GPU: the twin takes it (it mirrors, it does not schedule;
    here the first pod could have finished in between), the replayed state cannot."""
    binds = [("p001", "n0", [0]), ("p004", "n0", [0])]  # 1000 milli each on one GPU
    _session(history_url, binds)
    session = load_session(history_url, 1)
    with pytest.raises(TwinschedError) as info:
        replay_session_job((TEACHER, session))
    message = str(info.value)
    assert message.startswith("twin session 1, seq 2: pod p004 on node n0 does not fit")


def test_pods_bound_in_the_opening_document_start_bound(history_url: str) -> None:
    opening = state_with(scenario(NODES, PODS))
    opening.apply(Arrive(5))
    opening.apply(Bind(5, 3, (2, 3)))  # p005: two whole GPUs on n3
    _session(history_url, BINDS, opening)
    margins = replay_session_job((TEACHER, load_session(history_url, 1)))
    used = sum(PODS[int(p[1:])][2] * PODS[int(p[1:])][3] for p, _, _ in BINDS) + 2000
    assert margins.alloc_pct == pytest.approx(100.0 * used / 20_000)
    dispose(history_url)
    Path(history_url.removeprefix("sqlite:///")).unlink()
    _session(history_url, [("p005", "n0", [0, 1])], opening)  # moved: a decision too
    moved = replay_session_job((TEACHER, load_session(history_url, 1)))
    assert moved.decisions == 1 and moved.alloc_pct == pytest.approx(100.0 * 2000 / 20_000)


def test_distil_learns_from_a_twin_session_end_to_end(history_url: str, tmp_path: Path) -> None:
    _session(history_url)
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'teacher = "{TEACHER}"\nvariants = ["default"]\nval_variants = []\n'
                      "hidden = [4]\nepochs = 1\n")  # fmt: skip
    base = Margins.empty().save(tmp_path / "base.npz")  # no teacher runs: the session only
    out = tmp_path / "out"
    args = ["distil", "--recipe", str(recipe), "--margins", str(base), "--workers", "1",
            "--twin-db", history_url, "--out", str(out)]  # fmt: skip
    refused = CliRunner().invoke(app, [*args, "--from-twin-session", "1,2"])
    assert refused.exit_code != 0 and "twin session 2 is not in" in refused.output
    assert not out.exists()  # refused before anything is written
    got = CliRunner().invoke(app, [*args, "--from-twin-session", "1"])
    assert got.exit_code == 0, got.output
    spec = json.loads((out / "spec.json").read_text())
    assert spec["from_twin_sessions"] == [
        {"id": 1, "source": load_session(history_url, 1).source, "decisions": len(BINDS),
         "changes": len(BINDS)}
    ]  # fmt: skip
    assert (out / "policy.npz").is_file()
    learned = Margins.load(out / "margins.npz")
    replayed = replay_session_job((TEACHER, load_session(history_url, 1)))
    assert learned.checksum() == replayed.checksum()  # what it fitted: the session's margins
    assert json.loads((out / "metrics.json").read_text())["decisions"] == len(BINDS)
