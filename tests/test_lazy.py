"""Packages whose names are imported on first use (``twinsched/lazy.py``) still have them all."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("twinsched.report", "twinsched.sim", "twinsched.store", "twinsched.twin.harmonize")


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


def test_the_twin_app_imports_what_a_request_needs_on_first_use() -> None:
    """``twin serve`` starts without pandas (the predictor's models, the harmoniser's table
    readers), the schedulers and the simulator (explain, what-if, an application's fit check)
    or the Prometheus mirror: each comes with its route's first request."""
    later = ["pandas", "twinsched.twin.harmonize.core", "twinsched.twin.core.explain",
             "twinsched.twin.collectors.ksm", "twinsched.twin.dataset",
             "twinsched.twin.predict.features", "twinsched.scheduling.registry",
             "twinsched.sim"]  # fmt: skip
    code = (
        "import sys\n"
        "from twinsched.twin.api.app import create_app\n"
        f"print(*[m for m in {later!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == []


def test_fgd_imports_numba_only_where_it_pays() -> None:
    """A short FGD run scores nodes in plain Python without importing numba (0.6 s and 120
    MB to start); a process that has scored ``COMPILE_AFTER`` nodes, or has numba loaded,
    compiles. Placements are the same either way (tests/scheduling/test_lookahead_compiled.py)."""
    code = (
        "import sys\n"
        "from twinsched.scheduling.heuristics import fgd\n"
        "from twinsched.sim import run_fillup\n"
        "from twinsched.traces import synthetic\n"
        "sc = synthetic.cluster(seed=1, nodes=60)\n"
        "short = fgd.fgd_scheduler()\n"
        "run_fillup(sc, short, 0, target_pct=100)\n"
        "plugin = short.plugins[0][0]\n"
        "print(plugin._one is None, 'numba' in sys.modules, fgd._scored[0] > 0)\n"
        "fgd._scored[0] = fgd.COMPILE_AFTER\n"
        "long = fgd.fgd_scheduler()\n"
        "run_fillup(sc, long, 0, target_pct=100)\n"
        "print(long.plugins[0][0]._one is not None, 'numba' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False", "True", "True", "True"], done.stderr[-2000:]
