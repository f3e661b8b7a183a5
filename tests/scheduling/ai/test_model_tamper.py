"""Hostile models (issue 31, class 9): weights rewritten with their card, NaN weights, a deep
header, a user version without a card. Each must be refused at load and by ``models verify``."""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.scheduling.ai.model_store import (
    CARD,
    CardError,
    ModelError,
    ModelIntegrityError,
    ModelRegistry,
    sha256_file,
)
from twinsched.scheduling.ai.policy import WEIGHTS_FILE, Policy, random_policy
from twinsched.scheduling.ai.serving import create_ai_scheduler
from twinsched.scheduling.ai.shipped import SHIPPED_DIGESTS, SHIPPED_ROOT, Catalog

DATA = "0" * 64


def _register(root: Path, policy: Policy, name: str = "tiny") -> Path:
    card = ModelRegistry(root).register(name, "twinsched.policy", policy.save, {}, DATA, {})
    return card.path


def _rewrite_card(folder: Path) -> None:
    """What a tamperer does: recompute the card's checksums for the new files."""
    from twinsched.scheduling.ai.model_digest import combined, hash_folder

    card = json.loads((folder / CARD).read_text())
    card["files"] = hash_folder(folder)
    card["artifact_sha256"] = combined(card["files"])
    (folder / CARD).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")


def _negated(policy: Policy) -> Policy:
    return replace(policy, weights=tuple(-w for w in policy.weights))


def test_weights_rewritten_with_their_card_are_refused_at_load_and_by_verify(
    tmp_path: Path,
) -> None:
    folder = _register(tmp_path, random_policy(seed=1))
    assert ModelRegistry(tmp_path).verify("tiny") == []
    _negated(Policy.load(folder)).save(folder / WEIGHTS_FILE)  # finite, legit-looking
    _rewrite_card(folder)
    assert ModelRegistry(tmp_path).scan()[1] == []  # the card alone is consistent
    problems = ModelRegistry(tmp_path).verify("tiny")
    assert len(problems) == 1 and "digest does not match" in problems[0], problems
    assert ".digests/1" in problems[0]
    with pytest.raises(ModelIntegrityError, match="differ from the version registered"):
        create_ai_scheduler("ai:tiny", tmp_path)
    result = CliRunner().invoke(app, ["models", "verify", "--models-dir", str(tmp_path)])
    assert result.exit_code == 1 and "digest does not match" in result.output, result.output


def test_a_version_without_a_recorded_digest_is_refused(tmp_path: Path) -> None:
    folder = _register(tmp_path, random_policy(seed=1))
    (folder.parent / ".digests" / "1").unlink()
    with pytest.raises(ModelIntegrityError, match="no digest of card and files was recorded"):
        create_ai_scheduler("ai:tiny@1", tmp_path)


def test_shipped_models_are_checked_against_digests_in_the_source(tmp_path: Path) -> None:
    assert all(Catalog(tmp_path).check(c) == [] for c in Catalog(tmp_path).scan()[0])
    copy = tmp_path / "shipped"
    shutil.copytree(SHIPPED_ROOT, copy)
    folder = copy / "openb-gates" / "1"
    policy = Policy.load(folder)
    replace(policy, prior=None if policy.prior is None else -policy.prior).save(
        folder / WEIGHTS_FILE
    )
    _rewrite_card(folder)
    problems = ModelRegistry(copy, pinned=SHIPPED_DIGESTS).verify("openb-gates")
    assert problems and "pinned in the package" in problems[0], problems


def _npz(**arrays: object) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_naming_file_and_tensor(
    tmp_path: Path, value: float
) -> None:
    policy = random_policy(seed=3)
    w1 = policy.weights[1].copy()
    w1[0, 0] = value
    _register(tmp_path, replace(policy, weights=(policy.weights[0], w1, *policy.weights[2:])))
    with pytest.raises(TwinschedError, match=r"policy\.npz: tensor 'w1' has 1 non-finite"):
        create_ai_scheduler("ai:tiny", tmp_path)


def test_a_header_nested_3000_deep_is_a_clear_error(tmp_path: Path) -> None:
    policy = random_policy(seed=3)
    path = tmp_path / WEIGHTS_FILE
    good = np.load(io.BytesIO(policy.to_bytes()))
    arrays = {k: good[k] for k in good.files if k != "header"}
    path.write_bytes(_npz(header=np.array("[" * 3000 + "]" * 3000), **arrays))
    with pytest.raises(TwinschedError, match="nested 3000 levels deep, over the 16 allowed"):
        Policy.load(path)
    path.write_bytes(_npz(header=np.array('{"features": "' + "x" * (1 << 21) + '"}'), **arrays))
    with pytest.raises(TwinschedError, match="over the 1,048,576 allowed"):
        Policy.load(path)


def test_a_user_version_without_a_card_never_falls_back_to_the_shipped_model(
    tmp_path: Path,
) -> None:
    (tmp_path / "openb-gates" / "1").mkdir(parents=True)
    (tmp_path / "openb-gates" / "1" / WEIGHTS_FILE).write_bytes(b"anything")
    for ref in ("ai:openb-gates@1", "ai:openb-gates"):
        with pytest.raises(ModelError, match=r"openb-gates/1/card\.json: missing"):
            create_ai_scheduler(ref, tmp_path)


def test_the_newest_version_broken_is_an_error_listing_the_usable_ones(tmp_path: Path) -> None:
    _register(tmp_path, random_policy(seed=1))
    newest = _register(tmp_path, random_policy(seed=2))
    (newest / CARD).unlink()
    with pytest.raises(ModelError, match=r"newest version of 'tiny' cannot be used.*tiny@1"):
        create_ai_scheduler("ai:tiny", tmp_path)
    assert create_ai_scheduler("ai:tiny@1", tmp_path).name == "ai:tiny@1"
    with pytest.raises(CardError, match="missing"):
        ModelRegistry(tmp_path).get("tiny", 2)
    assert sha256_file(newest / WEIGHTS_FILE)  # the folder is left as it was
