"""A workflow submitted to a twin, seen in ``/ui`` (Debian's Chromium under Playwright): its
task pods in the pending queue as submitted, then, once the controller over the twin has run
it through (``workflows/twin_run.py``), counted as succeeded, with nothing left queued."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.twin.browser import continuum_twin
from twinsched.traces.synthetic import continuum
from twinsched.twin.client import TwinClient
from twinsched.twin.workflow import parse_submission
from twinsched.workflows.advisors import advise
from twinsched.workflows.platform import from_scenario
from twinsched.workflows.submit import submission_of
from twinsched.workflows.twin_run import run_on_twin
from twinsched.workflows.wfcommons import find_instance, load_instance

TOKEN = "workflow-ui-test-token-0123456789"
INSTANCE = "montage-chameleon-2mass-005d-001"  # 58 tasks


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A twin holding the nodes of synthetic-continuum seed 3 (no pod)."""
    with continuum_twin(tmp_path_factory.mktemp("twin-ui-workflow"), TOKEN, "ui test") as url:
        yield url


def queue_shown(page: Page) -> list[str]:
    """The pod ids of the ``/ui`` pending-queue table's rows."""
    return page.evaluate(  # type: ignore[no-any-return]
        "() => [...document.querySelectorAll('#queue tbody tr')].map((tr) => tr.dataset.pod)"
    )


def test_a_submitted_workflow_is_queued_then_succeeded_in_the_ui(twin: str, browser: Any) -> None:
    cluster = continuum(3, pods=0)
    dag = load_instance(find_instance(INSTANCE), inputs_at="edge")
    advice = advise(dag, from_scenario(cluster), "heft-links")
    sub = parse_submission(submission_of(dag, advice.priority, name="wf-ui"))
    with TwinClient(twin, TOKEN) as client:
        answer = client.submit_workflow(sub.model_dump())
        pending = {p["id"] for p in client.pods(job=sub.name) if p["phase"] == "Pending"}
    assert answer["pods"] == dag.n and len(pending) == answer["pending"] > 0

    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        page.goto(f"{twin}/ui")
        page.wait_for_selector("#queue tbody tr[data-pod]", timeout=10_000)
        shown = queue_shown(page)
        assert shown and set(shown) <= pending  # the workflow's released tasks, nothing else
        assert page.inner_text("#phase-Succeeded") == "0"

        out = run_on_twin(twin, TOKEN, sub, advice, "advised", links=True)
        assert out.makespan_s > 0
        page.wait_for_function(  # a frame comes every second
            f"() => document.getElementById('phase-Succeeded').textContent === '{dag.n}'",
            timeout=10_000,
        )
        assert queue_shown(page) == []
    finally:
        page.context.close()
