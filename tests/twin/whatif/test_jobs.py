"""The job runner: worker processes give the same figures; closing stops the job under way."""

from __future__ import annotations

import time

from twinsched.model.document import TwinDocument
from twinsched.twin.whatif.fork import fork_document
from twinsched.twin.whatif.jobs import Job, MakeFork, WhatIfJobs
from twinsched.twin.whatif.request import check_request


def wait(job: Job, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while not job.finished:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_worker_processes_give_the_same_figures(noon: TwinDocument) -> None:
    request = check_request(["bestfit", "random"], 3600.0, [0, 1, 2])
    make: MakeFork = lambda: (fork_document(noon, 3600.0)[0], None, 0)  # noqa: E731
    answers = []
    for workers in (0, 2):
        jobs = WhatIfJobs(workers)
        try:
            job = jobs.submit(0, request, make, 120.0)
            wait(job)
        finally:
            jobs.close()
        assert job.status == "done", job.error
        assert job.result is not None and job.done == 6
        answers.append([row["figures"] for row in job.result["schedulers"]])
    assert answers[0] == answers[1]


def test_closing_stops_the_job_under_way(noon: TwinDocument) -> None:
    request = check_request(["bestfit", "fgd"], 86400.0, list(range(10)))
    jobs = WhatIfJobs()
    job = jobs.submit(0, request, lambda: (fork_document(noon, 86400.0)[0], None, 0), 300.0)
    while job.status == "queued":
        time.sleep(0.01)
    jobs.close()
    started = time.monotonic()
    wait(job, 30.0)
    assert time.monotonic() - started < 10
    assert job.status == "failed" and "time limit" in (job.error or "")
    assert job.done < 20
