from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import twinsched.store as store
from twinsched.store.importers import importers

SRC = str(Path(store.__file__).resolve().parents[2])


def test_public_api_is_curated() -> None:
    assert sorted(store.__all__) == store.__all__
    for name in store.__all__:
        assert getattr(store, name) is not None
    public = {
        n for n, v in vars(store).items() if not n.startswith("_") and not isinstance(v, ModuleType)
    }
    assert public - {"annotations"} == set(store.__all__)


def test_builtin_importers_are_registered() -> None:
    assert set(importers()) >= {
        "alibaba-gpu-2023", "alibaba-gpu-2025-dlrm", "swf", "supercloud", "twin-json",
        "twin-csv", "synthetic",
    }  # fmt: skip


def test_without_alembic_the_store_names_its_extra() -> None:
    """Alembic is only looked for when the store is imported, yet its absence fails there."""
    code = "import sys; sys.modules['alembic'] = None; import twinsched.store"
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1
    assert "MissingExtraError" in done.stderr and "pip install 'twinsched[store]'" in done.stderr
