"""deploy/prometheus.yml checked by Prometheus's own promtool (Debian's, .ci/test-deps)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.deploy.files import DEPLOY


def promtool(config: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("promtool")
    assert tool, "promtool is not on PATH: make test installs it (.ci/test-deps)"
    return subprocess.run(
        [tool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
    )


def test_promtool_accepts_the_prometheus_config() -> None:
    done = promtool(DEPLOY / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_refuses_a_broken_config(tmp_path: Path) -> None:
    broken = tmp_path / "prometheus.yml"
    broken.write_text(
        (DEPLOY / "prometheus.yml")
        .read_text()
        .replace("scrape_interval: 15s", "scrape_interval: soon", 1)
    )
    assert promtool(broken).returncode != 0
