"""Packages whose names are imported on first use (``twinsched/lazy.py``) still have them all."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("twinsched.report", "twinsched.sim", "twinsched.store")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_there(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        module.nothing  # noqa: B018


def test_a_name_is_imported_when_first_asked_for() -> None:
    code = (
        "import sys, twinsched.sim as sim\n"
        "before = 'twinsched.sim.replay' in sys.modules\n"
        "sim.run_replay\n"
        "print(before, 'twinsched.sim.replay' in sys.modules, 'run_replay' in vars(sim))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True", "True"], done.stderr[-2000:]
