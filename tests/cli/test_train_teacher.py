"""``twinsched train --teacher-contested-only``: the switch reaches the recipe and the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from twinsched.cli import app

runner = CliRunner()


def test_contested_only_look_ahead_teacher_trains_and_is_recorded(tmp_path: Path) -> None:
    def train(switch: str, out: Path) -> tuple[dict[str, object], int]:
        args = ["train", "--trace", "synthetic-continuum", "--train-variants", "1",
                "--val-variants", "1", "--teacher", "lookahead:fgd/c=3/h=4/s=2/a=60", switch,
                "--epochs", "1", "--candidates", "4", "--prior", "fgd_score=100",
                "--tie-widths", "1", "--out", str(out)]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        spec: dict[str, object] = json.loads((out / "spec.json").read_text())
        found = re.search(r"round 0: (\d+) decisions", result.output)
        assert found, result.output
        return spec, int(found.group(1))

    on, kept = train("--teacher-contested-only", tmp_path / "on")
    off, every = train("--no-teacher-contested-only", tmp_path / "off")
    assert on["teacher_contested_only"] is True and off["teacher_contested_only"] is False
    assert 0 < kept < every
