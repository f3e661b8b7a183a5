"""``twinsched bandits``: runs that keep their posterior, a warm start from stored runs."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.store.bandits import load_posterior

runner = CliRunner()
NAME = "bandit:fgd|bestfit"


def test_runs_keep_the_posterior_and_stored_runs_warm_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'store.db'}"
    kept = ["bandits", "run", NAME, "--trace", "synthetic-continuum", "--db", db]
    first = runner.invoke(app, [*kept, "--seeds", "0"])
    assert first.exit_code == 0, first.output
    after_one = load_posterior(NAME, "synthetic-continuum", "fillup", db)
    assert after_one is not None and "1 runs" in first.output
    second = runner.invoke(app, [*kept, "--seeds", "1"])
    assert second.exit_code == 0 and "2 runs" in second.output
    after_two = load_posterior(NAME, "synthetic-continuum", "fillup", db)
    assert after_two is not None
    grew = [b - a for r1, r2 in zip(after_one.count, after_two.count, strict=True)
            for a, b in zip(r1, r2, strict=True)]  # fmt: skip
    assert min(grew) >= 0 and sum(grew) > 0  # the second run added to the first's

    run = ["run", "--trace", "synthetic-continuum", "--schedulers", NAME, "--seeds", "0"]
    recorded = runner.invoke(app, [*run, "--target", "100", "--db", db])
    assert recorded.exit_code == 0, recorded.output
    warm = ["bandits", "warm", NAME, "--runs", "1", "--scenario", "warm-key", "--db", db]
    warmed = runner.invoke(app, warm)
    assert warmed.exit_code == 0 and "from 1 of 1 runs" in warmed.output, warmed.output
    posterior = load_posterior(NAME, "warm-key", "fillup", db)
    assert posterior is not None
    counts = {tuple(row) for row in posterior.count if any(row)}
    assert all(a == b for a, b in counts)  # every member's reward of every decision
    shown = runner.invoke(app, ["bandits", "show", NAME, "--scenario", "warm-key", "--db", db])
    assert "context 0: fgd" in shown.output
    refused = runner.invoke(app, [*warm[:2], "bandit:fgd|random", *warm[3:]])
    assert refused.exit_code == 2 and "no stored run" in refused.output, refused.output
    assert load_posterior("bandit:fgd|random", "warm-key", "fillup", db) is None
