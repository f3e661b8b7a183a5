"""Fitting the member per job kind: coordinate ascent from the best single member."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.scheduling.fanout.kinds import load
from twinsched.training import kinds as fitting
from twinsched.training.kinds import FitSpec, fit

SPEC = FitSpec("synthetic-continuum", ("0",), (0,), ("fgd", "bestfit"), k=2, runtime=True)


def test_fit_starts_from_the_best_single_member_and_only_improves(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    real = fitting.objective

    def counted(spec: FitSpec, names: list[str]) -> dict[str, float]:
        calls.append(list(names))
        return real(spec, names)

    fitting.objective = counted  # type: ignore[assignment]
    try:
        result = fit(SPEC, tmp_path, progress=lambda _: None)
    finally:
        fitting.objective = real
    assert result.best_single == max(result.singles, key=lambda m: result.singles[m])
    scores = [score for _, score in result.history]
    assert scores == sorted(scores) and result.score == scores[-1]
    assert result.score >= result.singles[result.best_single]
    assert result.model.k == 2 and set(result.model.members) <= {"fgd", "bestfit"}
    tried = [name for batch in calls[1:] for name in batch]
    assert len(tried) == len(set(tried))  # no choice run twice across passes


def test_the_command_writes_a_model_and_refuses_repeated_members(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "k.json"
    args = ["kinds", "fit", "--trace", "synthetic-continuum", "--variant", "0", "--k", "2",
            "--seeds", "0", "--passes", "1", "--out", str(out)]  # fmt: skip
    done = runner.invoke(app, [*args, "--members", "fgd,bestfit"])
    assert done.exit_code == 0, done.output
    assert "| kind | pods |" in done.output and load(out).k == 2
    bad = runner.invoke(app, [*args, "--members", "fgd,fgd"])
    assert bad.exit_code != 0 and "distinct scheduler names" in bad.output
