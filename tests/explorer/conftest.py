"""The explorer tests' stores: three runs, then a tiny sweep of 10 seeds and two fill-up
targets (runs 4-23); a model registry with one model and one broken card."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from twinsched.experiments.runner import execute
from twinsched.experiments.sweep import cell_key, load_spec
from twinsched.experiments.sweep_driver import register
from twinsched.model.run import RunSpec
from twinsched.scheduling.ai.model_store import ModelRegistry
from twinsched.store import record_run
from twinsched.store.db import dispose

SPECS = [
    RunSpec("synthetic-continuum", "fgd", 0, "3"),
    RunSpec("synthetic-continuum", "bestfit", 0, "3"),
    RunSpec("synthetic-continuum", "fgd", 1, "3", mode="replay", sample_every_s=600.0),
]


SWEEP = """name = "tiny"
traces = ["synthetic-continuum/1"]
schedulers = ["random"]
seeds = 10
target_pct = [80.0, 100.0]
mode = "fillup"
"""


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the spec of a tiny sweep."""
    folder = tmp_path_factory.mktemp("sweeps")
    (folder / "tiny.toml").write_text(SWEEP)
    return folder


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, sweeps: Path) -> Iterator[str]:
    """Runs 1-3 (SPECS), then the tiny sweep's two cells (runs 4 and 5)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('explorer') / 'store.db'}"
    for spec in SPECS:
        record_run(spec, execute(spec), url)
    sweep = load_spec(sweeps / "tiny.toml")
    for cell in sweep.cells():
        record_run(cell, execute(cell), url, key=cell_key(cell))
    register(sweep, url)  # links the stored cells to the sweep, as `sweep run` does
    yield url
    dispose(url)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A registry with one model, and a second whose card is broken."""
    root = tmp_path_factory.mktemp("models")
    registry = ModelRegistry(root)
    registry.register("tiny", "twinsched.policy", {"weights.bin": b"0123"}, {"epochs": 1},
                      "ab" * 32, {"val_alloc_pct": 88.5})  # fmt: skip
    broken = registry.register("broken", "twinsched.policy", {"w.bin": b"1"}, {}, "cd" * 32)
    (broken.path / "card.json").write_text("{not json")
    return root
