"""Hostile model weights (issue 31, class 9): each must be refused when the model is loaded.

Hypothesis draws one of: weights changed (negated, scaled, noise; finite) with the card's
checksums recomputed (``tamper``); a NaN or an infinity in a tensor, registered as it is
(``nonfinite``); a header nested deeper than allowed or over 1 MiB (``deep``, ``huge``);
random bytes as the weights, card recomputed (``bytes``); a user version without a card under
a shipped name (``cardless``); and a valid policy (``valid``), which must load. Loading is
``create_ai_scheduler`` (what ``ai:NAME`` runs); a refusal is "clear" when it is a twinsched
error, a hostile model served is "stored wrongly", any other exception a "traceback". For
tampering, ``models verify`` must also exit 1 without a traceback. Shared by
``tests/scheduling/ai/test_weights_fuzz.py`` (small budget) and ``bench/fuzz_cards.py``.
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests import fuzz_table
from twinsched.cli import app
from twinsched.errors import TwinschedError
from twinsched.scheduling.ai.model_digest import combined, hash_folder
from twinsched.scheduling.ai.model_store import CARD, ModelRegistry
from twinsched.scheduling.ai.policy import WEIGHTS_FILE, Policy, random_policy
from twinsched.scheduling.ai.serving import create_ai_scheduler

HOW = ("tamper", "nonfinite", "deep", "huge", "bytes", "cardless", "valid")
runner = CliRunner()
Tally = fuzz_table.Tally


def _recard(folder: Path) -> None:
    card = json.loads((folder / CARD).read_text())
    card["files"] = hash_folder(folder)
    card["artifact_sha256"] = combined(card["files"])
    (folder / CARD).write_text(json.dumps(card))


def _with_header(policy: Policy, header: str) -> bytes:
    good = np.load(io.BytesIO(policy.to_bytes()))
    buffer = io.BytesIO()
    np.savez(buffer, header=np.array(header), **{k: good[k] for k in good.files if k != "header"})
    return buffer.getvalue()


@st.composite
def hostile_models(draw: st.DrawFn) -> tuple[str, int, float, int]:
    """(how, seed, a value, a size) for :func:`check`."""
    how = draw(st.sampled_from(HOW))
    value = draw(st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e30, 2.0]))
    return how, draw(st.integers(0, 2**16)), value, draw(st.integers(17, 20_000))


def _prepare(root: Path, how: str, seed: int, value: float, size: int) -> str:
    """Write the hostile model under ``root``; the reference to load."""
    policy = random_policy(seed=seed)
    registry = ModelRegistry(root)
    if how == "cardless":
        (root / "openb-gates" / "1").mkdir(parents=True)
        (root / "openb-gates" / "1" / WEIGHTS_FILE).write_bytes(policy.to_bytes())
        return "ai:openb-gates@1" if seed % 2 else "ai:openb-gates"
    if how == "nonfinite":
        w = policy.weights[seed % len(policy.weights)].copy()
        w.flat[seed % w.size] = value if not np.isfinite(value) else np.nan
        weights = tuple(w if x.shape == w.shape else x for x in policy.weights)
        policy = replace(policy, weights=weights)
    save: object = policy.save
    if how == "deep":
        save = {WEIGHTS_FILE: _with_header(policy, "[" * size + "]" * size)}
    elif how == "huge":
        save = {WEIGHTS_FILE: _with_header(policy, '"' + "x" * ((1 << 20) + size) + '"')}
    card = registry.register("m", "twinsched.policy", save, {}, "0" * 64, {})  # type: ignore[arg-type]
    if how == "tamper":
        factor = value if np.isfinite(value) and value != 1.0 else -1.0
        bent = replace(policy, weights=tuple(w * np.float32(factor) for w in policy.weights))
        bent.save(card.path / WEIGHTS_FILE)
        _recard(card.path)
    elif how == "bytes":
        (card.path / WEIGHTS_FILE).write_bytes(np.random.default_rng(seed).bytes(size))
        _recard(card.path)
    return "ai:m"


def check(drawn: tuple[str, int, float, int], root: Path, tally: Tally) -> None:
    """Write one drawn model in a fresh registry, load it, count how it ended."""
    how, seed, value, size = drawn
    shutil.rmtree(root, ignore_errors=True)
    ref = _prepare(root, how, seed, value, size)
    try:
        create_ai_scheduler(ref, root)
    except TwinschedError as exc:
        outcome = "clear" if how != "valid" else "wrongly"
        tally.add(outcome, f"{how}: valid model refused: {exc!s:.160}")
    except Exception as exc:
        tally.add("tracebacks", f"{how}: {exc!r:.160}")
    else:
        outcome = "accepted" if how == "valid" else "wrongly"
        tally.add(outcome, f"{how} (seed {seed}, {value}, {size}) was served")
    if how in ("tamper", "bytes"):
        verified = runner.invoke(app, ["models", "verify", "--models-dir", str(root)])
        crashed = verified.exception is not None and not isinstance(verified.exception, SystemExit)
        if verified.exit_code != 1 or crashed or "Traceback" in verified.output:
            tally.add(
                "wrongly", f"models verify of {how}: {verified.exit_code} {verified.output!r:.160}"
            )
            tally.tried -= 1  # the same input, counted once
