"""Start-up stays light: ``twinsched --help`` imports none of the heavy libraries.

Each command imports what it needs inside its function; a module-level import of the store,
the twin app or a training module in ``twinsched.cli`` would pull them into every command's
start-up (it took 0.95 s before the ``cli/`` package). The test looks at the modules imported,
not at wall time, which depends on the machine.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import twinsched
from tests.traces.test_alibaba_gpu_2023 import NODES
from tests.traces.test_alibaba_gpu_2023 import write as write_openb

SRC = Path(twinsched.__file__).resolve().parents[1]

HEAVY = frozenset(
    {
        "sqlalchemy", "alembic", "pandas", "matplotlib", "torch", "ray", "fastapi", "ortools",
        "uvicorn", "httpx", "sklearn", "statsmodels", "gymnasium",
    }
)  # fmt: skip


def imported_packages(*args: str) -> set[str]:
    """Top-level packages that ``python -m twinsched.cli ARGS`` imports (``-X importtime``)."""
    return {module.split(".")[0] for module in imported_modules(*args)}


def imported_modules(*args: str) -> set[str]:
    """Modules that ``python -m twinsched.cli ARGS`` imports (``-X importtime``)."""
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "twinsched.cli", *args],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # lines read "import time: <self us> | <cumulative us> | <indent>package.module"
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[-1].strip() for line in lines[1:]}  # 0: header


COMMANDS = ("schedulers", "twin", "scenarios", "runs", "train", "models", "workflow", "vte",
            "run", "autoscale", "twin serve")  # fmt: skip
HELP = [["--help"]] + [[*command.split(), "--help"] for command in COMMANDS]


@pytest.mark.parametrize("args", HELP, ids=" ".join)
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    packages = imported_packages(*args)
    assert "twinsched" in packages  # the parse worked
    heavy = sorted(packages & HEAVY)
    assert not heavy, f"twinsched {' '.join(args)} imports {heavy}"


def test_nothing_below_the_cli_imports_it() -> None:
    """The CLI is the top layer: no other module of twinsched imports it, even in a function."""
    offenders = []
    for path in sorted((SRC / "twinsched").rglob("*.py")):
        if (SRC / "twinsched" / "cli") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            offenders += [f"{path}: {n}" for n in names if n.split(".")[:2] == ["twinsched", "cli"]]
    assert not offenders


def test_a_run_on_a_cached_trace_imports_no_heavy_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run of a trace reads its parsed columns (no pandas), and only the plots of
    ``--out`` import matplotlib."""
    monkeypatch.setenv("TWINSCHED_CACHE", str(tmp_path / "cache"))
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\np1,900,512,0,0\n"
    root = write_openb(tmp_path, NODES, pods)
    args = ["run", "--trace", "alibaba-gpu-2023", "--variant", "default", "--data", str(root),
            "--schedulers", "fgd", "--seeds", "0", "--no-record"]  # fmt: skip
    assert "pandas" in imported_packages(*args)  # the first run parses
    assert not imported_packages(*args) & HEAVY
    assert imported_packages(*args, "--out", str(tmp_path / "out")) & HEAVY == {"matplotlib"}


def test_a_recorded_run_on_a_migrated_store_imports_only_what_it_writes_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is recorded (SQLAlchemy Core), but Alembic is imported only to migrate: the
    first run creates the store, the second finds it at the head revision."""
    monkeypatch.setenv("TWINSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TWINSCHED_DB", str(tmp_path / "store.db"))
    pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,500\n"
    root = write_openb(tmp_path, NODES, pods)
    args = ["run", "--trace", "alibaba-gpu-2023", "--variant", "default", "--data", str(root),
            "--schedulers", "fgd", "--seeds", "0"]  # fmt: skip
    assert {"alembic", "sqlalchemy"} <= imported_packages(*args)  # creates the store
    modules = imported_modules(*args)
    assert {m.split(".")[0] for m in modules} & HEAVY == {"sqlalchemy"}
    # the run's rows are written through SQLAlchemy Core: no ORM, no PostgreSQL dialect on
    # SQLite, none of the store's scenario modules, no pydantic document models
    unneeded = {"sqlalchemy.orm", "sqlalchemy.dialects.postgresql", "twinsched.store.scenarios",
                "twinsched.model.data"}  # fmt: skip
    assert not modules & unneeded
