"""``teacher_contested_only`` in a recipe file: the switch reaches the recipe and the spec."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from twinsched.cli import app

runner = CliRunner()


def test_contested_only_look_ahead_teacher_trains_and_is_recorded(tmp_path: Path) -> None:
    def train(switch: str, out: Path) -> tuple[dict[str, object], int]:
        recipe = tmp_path / f"{switch}.toml"
        recipe.write_text(
            '[data]\ntrace = "synthetic-continuum"\ntrain_variants = ["1"]\n'
            'val_variants = ["1"]\n[clone]\nteacher = "lookahead:fgd/c=3/h=4/s=2/a=60"\n'
            f"teacher_contested_only = {switch}\nepochs = 1\ncandidates = 4\n"
            "prior = { fgd_score = 100 }\n[ties]\nresolutions = [1]\n"
        )
        result = runner.invoke(app, ["train", "--recipe", str(recipe), "--out", str(out)])
        assert result.exit_code == 0, result.output
        spec: dict[str, object] = json.loads((out / "spec.json").read_text())
        found = re.search(r"round 0: (\d+) decisions", result.output)
        assert found, result.output
        return spec, int(found.group(1))

    on, kept = train("true", tmp_path / "on")
    off, every = train("false", tmp_path / "off")
    assert on["teacher_contested_only"] is True and off["teacher_contested_only"] is False
    assert 0 < kept < every
