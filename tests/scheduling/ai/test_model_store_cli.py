"""``twinsched models list/show/delete/verify`` on a registry in a temporary folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

from typer.testing import CliRunner

from twinsched.cli.models import app
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.scheduling.ai.shipped import SHIPPED_ROOT

runner = CliRunner()
DATA = hashlib.sha256(b"data").hexdigest()
SHIPPED = ModelRegistry(SHIPPED_ROOT)  # the package's own models, listed after the user's
SHIPPED_VERSIONS = sum(len(SHIPPED.versions(name)) for name in SHIPPED.names())


def _registry(root: Path) -> ModelRegistry:
    reg = ModelRegistry(root)
    for n in (1, 2):
        reg.register("policy", "twinsched.policy", {"model.pt": b"w%d" % n}, {"epochs": n}, DATA,
                     {"alloc_pct": 90.0 + n})  # fmt: skip
    reg.register("other", "k", {"f": b""}, {}, DATA)
    return reg


def _run(root: Path, *args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, [*args, "--models-dir", str(root)], input=stdin)
    return result.exit_code, result.output


def test_list_and_show(tmp_path: Path) -> None:
    code, out = _run(tmp_path, "list")  # no user model: the shipped ones only
    assert code == 0 and out.count("│ shipped") == SHIPPED_VERSIONS and "twinsched.policy" in out
    assert "user" not in out
    _registry(tmp_path)
    code, out = _run(tmp_path, "list")
    assert code == 0
    rows = [[c.strip() for c in line.split("│")] for line in out.splitlines()]
    assert [row[1:4] for row in rows if "twinsched.policy" in row and "user" in row] == [
        ["policy", "1", "twinsched.policy"], ["policy", "2", "twinsched.policy"],
    ]  # fmt: skip
    assert "alloc_pct=92" in out and DATA[:12] in out and "other" in out
    code, out = _run(tmp_path, "list", "other")
    assert code == 0 and "policy" not in out
    code, out = _run(tmp_path, "show", "policy@1")
    assert code == 0
    assert '{"epochs": 1}' in out and "metric alloc_pct" in out and "91" in out
    assert "file model.pt" in out and "version of python" in out


def test_unknown_names_exit_2_listing_the_known_ones(tmp_path: Path) -> None:
    _registry(tmp_path)
    code, out = _run(tmp_path, "show", "polcy")
    known = ", ".join(sorted(["other", "policy", *SHIPPED.names()]))
    assert code == 2 and f"unknown model 'polcy'; known: {known}" in out
    code, out = _run(tmp_path, "show", "policy@9")
    assert code == 2 and "known: policy@1, policy@2" in out
    code, out = _run(tmp_path, "show", "policy@x")
    assert code == 2 and "bad model reference" in out


def test_delete_asks_unless_yes(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    code, out = _run(tmp_path, "delete", "policy@1", stdin="n\n")
    assert code == 1 and "Aborted" in out and reg.versions("policy") == [1, 2]
    code, out = _run(tmp_path, "delete", "policy@1", stdin="y\n")
    assert code == 0 and "deleted policy@1" in out and reg.versions("policy") == [2]
    code, out = _run(tmp_path, "delete", "policy", "--yes")
    assert code == 0 and reg.names() == ["other"]


def test_verify_reports_tampering_with_exit_1(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    code, out = _run(tmp_path, "verify")
    assert code == 0 and out.count(" ok ") == 3 + SHIPPED_VERSIONS
    (reg.get("policy", 1).path / "model.pt").write_bytes(b"changed")
    code, out = _run(tmp_path, "verify")
    assert (
        code == 1
        and "policy@1: file 'model.pt': sha256" in out
        and out.count(" ok ") == 2 + SHIPPED_VERSIONS
    )
    assert _run(tmp_path, "verify", "policy@2")[0] == 0
    assert _run(tmp_path, "verify", "policy")[0] == 1
    assert _run(tmp_path, "verify", "nope")[0] == 2
