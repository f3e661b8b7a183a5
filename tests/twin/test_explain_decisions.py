"""The twin explains a decision it keeps (issue 42): ``GET /api/v1/decisions/{seq}/explain``
on the state its bind's version held, the pod pending again, from the history after later
writes; 404 for what it cannot explain."""

from __future__ import annotations

from typing import Any

from tests.twin.conftest import TOKEN, SyncASGI, make_client, tiny_document
from tests.twin.test_decisions import API, _bind, _release
from twinsched.twin.core.settings import TwinSettings


def _explain(twin: SyncASGI, seq: int, **params: Any) -> Any:
    return twin.get(f"{API}/decisions/{seq}/explain", params=params)


def test_a_kept_decision_is_explained_on_the_state_it_saw(history_url: str) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=history_url), tiny_document())
    assert _bind(twin, 1.0, "p1", "g1", scheduler="bestfit*3+labels").status_code == 200
    assert _bind(twin, 2.0, "p2", "g1", scheduler="fgd").status_code == 200
    _release(twin, 3.0, "p1")  # later writes: the history gives the state back
    assert _bind(twin, 4.0, "p1", "n2", scheduler="firstfit").status_code == 200
    first = _explain(twin, 1, top=3)
    assert first.status_code == 200, first.text
    e = first.json()
    assert (e["pod_name"], e["chosen_name"], e["scheduler"]) == ("p1", "g1", "bestfit*3+labels")
    assert e["filters"] == {"nodes": 3, "eligible": 3, "removed": {}, "named": {}}
    assert set(e["ranking"][0]["terms"]) == {"bestfit*3", "labels"}
    assert e["parts"]["twin"]["seed"].startswith("not known")
    assert e["chosen"] == e["ranking"][0]["node"] or e["moved_by"]
    second = _explain(twin, 2).json()  # p1 still held g1 when p2 was placed
    assert second["chosen_name"] == "g1" and second["filters"]["eligible"] == 3
    what_if = _explain(twin, 3, to="n1").json()["counterfactual"]
    assert what_if["node"] == "n1" and not what_if["valid"] and "frag_amount_pct" in what_if["to"]
    twin.close()


def test_what_the_twin_cannot_explain() -> None:
    twin = make_client(TwinSettings(token=TOKEN), tiny_document())
    assert _bind(twin, 1.0, "p1", "g1", scheduler="fgd").status_code == 200
    assert _bind(twin, 2.0, "p2", "n1", model_version="mine@7").status_code == 200
    assert _explain(twin, 1).json()["source"] == "the twin's state at version 2 (session 1)"
    unnamed = _explain(twin, 2)
    assert unnamed.status_code == 404 and "without the scheduler" in unnamed.json()["detail"]
    assert _explain(twin, 9).status_code == 404
    assert _explain(twin, 0).status_code == 422
    assert _explain(twin, 1, session=7).status_code == 404
    assert _explain(twin, 2, to="nowhere").status_code == 404
    assert _bind(twin, 3.0, "p1", "n2", scheduler="nonesuch").status_code == 200
    unknown = _explain(twin, 3)
    assert unknown.status_code == 404 and "nonesuch" in unknown.json()["detail"]
    assert _explain(twin, 3, top=0).status_code == 422
    twin.close()
