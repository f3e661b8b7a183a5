from __future__ import annotations

from types import ModuleType

import twinsched.store as store
from twinsched.store.importers import importers


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
