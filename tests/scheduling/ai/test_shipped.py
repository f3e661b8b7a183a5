"""The model shipped inside the package: its files match its card, it serves as ``ai:NAME``
with an empty user registry, a user model of the same name takes its place, and it cannot
be deleted."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twinsched.cli.models import app
from twinsched.errors import UnknownNameError
from twinsched.scheduling.ai.model_digest import version_digest
from twinsched.scheduling.ai.model_store import CARD, ModelError, ModelRegistry
from twinsched.scheduling.ai.policy import random_policy
from twinsched.scheduling.ai.scheduler import PolicyScheduler
from twinsched.scheduling.ai.serving import create_ai_scheduler, list_models
from twinsched.scheduling.ai.shipped import SHIPPED_ROOT, Catalog, is_shipped
from twinsched.scheduling.ai.ties import TieGates

SHIPPED = "openb-gates"
runner = CliRunner()


@pytest.fixture
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package whose shipped folder holds one policy with tie gates (the layout of
    ``shipped_models/``); returns the user's (empty) registry folder."""
    root = tmp_path / "package" / "shipped_models"
    policy = random_policy(seed=3, prior={"fgd_score": 100.0})
    gate = {"kind": "share", "width": 4.0, "when": []}
    policy.meta["resolution"] = {"base": 1.0, "gates": [gate]}
    card = ModelRegistry(root).register(SHIPPED, "twinsched.policy", policy.save, {"prior": "fgd"},
                                        "0" * 64, {"val_alloc_pct": 93.0})  # fmt: skip
    monkeypatch.setattr("twinsched.scheduling.ai.shipped.SHIPPED_ROOT", root)
    pinned = {card.ref: version_digest(card.path)}  # what the package's source would pin
    monkeypatch.setattr("twinsched.scheduling.ai.shipped.SHIPPED_DIGESTS", pinned)
    return tmp_path / "user-models"


def test_every_shipped_model_matches_its_card() -> None:
    """What the package holds: each file hashed here, against its card."""
    assert (SHIPPED_ROOT / "README.md").is_file()  # the folder is package data
    cards, bad = ModelRegistry(SHIPPED_ROOT).scan()
    assert not bad
    for card in cards:
        on_disk = {
            p.relative_to(card.path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in card.path.rglob("*")
            if p.is_file() and p.name != CARD
        }
        assert on_disk == card.files, card.ref  # no file missing, extra or altered
        assert sum(p.stat().st_size for p in card.path.iterdir()) < 64 * 1024  # small
        assert Catalog().check(card) == []  # card and files: the digest pinned in shipped.py


def test_an_altered_shipped_file_is_refused(shipped: Path) -> None:
    card = Catalog(shipped).get(SHIPPED)
    (card.path / "policy.npz").write_bytes(b"changed")
    with pytest.raises(ModelError, match="does not match"):
        create_ai_scheduler(f"ai:{SHIPPED}", shipped)
    verified = runner.invoke(app, ["verify", "--models-dir", str(shipped)])
    assert verified.exit_code == 1 and "policy.npz" in verified.output


def test_it_serves_as_ai_name_with_no_user_model(shipped: Path) -> None:
    tmp_path = shipped
    scheduler = create_ai_scheduler(f"ai:{SHIPPED}", tmp_path)  # an empty user registry
    assert isinstance(scheduler, PolicyScheduler) and scheduler.name == f"ai:{SHIPPED}@1"
    assert isinstance(scheduler.ties, TieGates) and scheduler.ties.gates  # what it learned
    listed = list_models(tmp_path)
    assert "(shipped)" in listed[f"ai:{SHIPPED}"]
    out = runner.invoke(app, ["list", "--models-dir", str(tmp_path)], env={"COLUMNS": "250"})
    row = next(line for line in out.output.splitlines() if SHIPPED in line)
    assert out.exit_code == 0 and row.rstrip(" │").endswith("shipped")
    verified = runner.invoke(app, ["verify", SHIPPED, "--models-dir", str(tmp_path)])
    assert verified.exit_code == 0 and f"{SHIPPED}@1" in verified.output


def test_a_user_model_of_the_same_name_takes_its_place(shipped: Path) -> None:
    tmp_path = shipped
    catalog = Catalog(tmp_path)
    with pytest.raises(ModelError, match="ships with twinsched"):
        catalog.writable(SHIPPED)
    deleted = runner.invoke(app, ["delete", SHIPPED, "--yes", "--models-dir", str(tmp_path)])
    assert deleted.exit_code == 2 and "cannot be deleted" in deleted.output
    mine = random_policy(seed=1)
    catalog.user.register(SHIPPED, "twinsched.policy", mine.save, {}, "0" * 64, {})
    card = catalog.get(SHIPPED)
    assert not is_shipped(card) and card.path.is_relative_to(tmp_path)
    shipped = [c for c in catalog.scan()[0] if is_shipped(c)]
    assert [c.name for c in shipped if catalog.hidden(c)] == [SHIPPED]
    out = runner.invoke(app, ["list", "--models-dir", str(tmp_path)], env={"COLUMNS": "250"})
    assert "shipped (hidden by yours)" in out.output
    with pytest.raises(UnknownNameError, match=f"known: {SHIPPED}"):
        catalog.get("nope")
