"""Hostile sweeps (issue 31, class 8): names that climb out of ``out/`` or carry a NUL, unknown
variants, grids too large to build, and a sweep killed while its workers run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from twinsched.cli import app
from twinsched.cli.sweep import run_command
from twinsched.experiments.executors import SerialExecutor
from twinsched.experiments.sweep import MAX_CELLS, SweepSpecError, parse_spec
from twinsched.experiments.sweep_driver import register, run_spec
from twinsched.model.names import BadNameError, check_safe_name, confined
from twinsched.store import list_sweeps, register_sweep, sweep_info
from twinsched.store.db import engine_for
from twinsched.store.schema import RunRow, SweepRow
from twinsched.traces.registry import VariantError, check_variant, load

SRC = Path(__file__).resolve().parents[2] / "src"
GRID = {"traces": ["synthetic-continuum"], "schedulers": ["random"], "seeds": 1}
BAD_NAMES = ["..", ".", "../..", "a/../../x", "x\x00y", "", "-x", ".hidden", "a b", "é", "x" * 65]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_sweep_names_are_refused_by_the_spec_naming_the_rule(name: str) -> None:
    with pytest.raises(SweepSpecError, match=r"key 'name'.*ASCII letters"):
        parse_spec({"name": name, **GRID})


@pytest.mark.parametrize("name", ["a", "fgd-study", "v1.2_x", "9" * 64])
def test_good_names_pass(name: str) -> None:
    assert parse_spec({"name": name, **GRID}).name == name


def test_the_store_checks_names_before_any_query(db: str) -> None:
    """A NUL reached PostgreSQL as a traceback; now no name off the grammar gets that far."""
    for name in ("x\x00y", "../.."):
        with pytest.raises(BadNameError):
            register_sweep(name, {}, [], db)
        with pytest.raises(BadNameError):
            sweep_info(name, db)
    assert list_sweeps(db) == []


def test_confined_refuses_a_path_that_leaves_its_folder(tmp_path: Path) -> None:
    assert confined(tmp_path, "a") == (tmp_path / "a").resolve()
    for parts in (("..",), ("../x",), ("a", "../../b"), ("/etc",)):
        with pytest.raises(BadNameError, match="outside"):
            confined(tmp_path, *parts)


def test_sweep_report_never_writes_outside_out(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored sweep renamed ``../..`` behind the checks' back (an old store): its report
    wrote summary.csv and the figure into the working folder, outside ``out/``."""
    run_spec(parse_spec({"name": "ok", **GRID}), sqlite_url, SerialExecutor())
    with engine_for(sqlite_url).begin() as conn:
        conn.execute(update(SweepRow).values(name="../.."))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for name in ("../..", "x\x00y", "..", "a/b"):
        result = CliRunner().invoke(app, ["sweep", "report", name, "--db", sqlite_url])
        assert result.exit_code == 2, result.output
        assert "bad sweep name" in result.output, result.output
    assert list(work.iterdir()) == []  # nothing written anywhere
    (work / "x.toml").write_text('name = "../.."\ntraces = ["synthetic-continuum"]\n'
                                 'schedulers = ["random"]\n')  # fmt: skip
    result = CliRunner().invoke(app, ["sweep", "run", "x.toml", "--db", sqlite_url])
    assert result.exit_code == 2 and "key 'name'" in result.output, result.output
    assert [p.name for p in work.iterdir()] == ["x.toml"]


def test_check_safe_name_quotes_a_bounded_excerpt() -> None:
    with pytest.raises(BadNameError) as caught:
        check_safe_name("x" * 100_000)
    assert len(str(caught.value)) < 300


# --- variants -------------------------------------------------------------------------


BAD_TRACES = [
    "synthetic-continuum/../../x", "synthetic-continuum/banana", "synthetic-continuum/-1",
    "synthetic-continuum/007", "synthetic-continuum/²", "synthetic-continuum/4294967296",
    "synthetic-cluster/0", "synthetic-cluster/1000001", "alibaba-gpu-2023/banana",
    "alibaba-gpu-2023/../default", "synthetic-continuum/1/2",
]  # fmt: skip


@pytest.mark.parametrize("trace", BAD_TRACES)
def test_unknown_variants_are_refused_listing_the_known_ones(trace: str) -> None:
    with pytest.raises(SweepSpecError, match=r"key 'traces'.*known:"):
        parse_spec({"name": "v", **GRID, "traces": [trace]})
    name, _, variant = trace.partition("/")
    with pytest.raises(VariantError, match="known:"):
        load(name, variant)  # the loader itself refuses: no silent variant 0


def test_known_variants_pass() -> None:
    for trace, variant in [("synthetic-continuum", ""), ("synthetic-continuum", "4294967295"),
                           ("synthetic-cluster", "7"), ("alibaba-gpu-2023", "cpu050")]:  # fmt: skip
        assert check_variant(trace, variant) == variant


def test_run_with_an_unknown_variant_fails_and_stores_nothing(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--variant", "banana", "--schedulers", "random", "--db", sqlite_url]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "unknown synthetic-continuum variant 'banana'; known: a seed" in result.output
    with engine_for(sqlite_url).connect() as conn:  # no run stored under the bad name
        assert conn.execute(select(func.count()).select_from(RunRow)).scalar_one() == 0


# --- grid size ------------------------------------------------------------------------


def test_a_grid_over_the_cap_is_refused_before_any_cell_is_built() -> None:
    huge = parse_spec({"name": "huge", **GRID, "seeds": 10_000, "target_pct": [
        float(t) for t in range(1, 1001)]})  # fmt: skip
    assert huge.size() == 10**7
    start = time.perf_counter()
    with pytest.raises(SweepSpecError, match=r"10,000,000 cells .* cap of 100,000 .*--max-cells"):
        huge.cells()
    assert time.perf_counter() - start < 1  # counted, not built (it took 253 s and 4.4 GB)
    assert len(parse_spec({"name": "ok", **GRID, "seeds": 50}).cells(max_cells=50)) == 50
    with pytest.raises(SweepSpecError, match="cap of 49 "):
        register(parse_spec({"name": "ok", **GRID, "seeds": 50}), None, 49)


def test_sweep_run_dry_run_names_the_cap_and_max_cells_moves_it(tmp_path: Path) -> None:
    def dry_run(seeds: int, targets: int, *extra: str) -> tuple[int, str]:
        spec = tmp_path / "big.toml"
        spec.write_text(
            'name = "big"\ntraces = ["synthetic-continuum"]\nschedulers = ["random"]\n'
            f"seeds = {seeds}\ntarget_pct = {[float(t + 1) for t in range(targets)]}\n"
        )
        db = f"sqlite:///{tmp_path / 's.db'}"
        result = CliRunner().invoke(
            app, ["sweep", "run", str(spec), "--dry-run", "--db", db, *extra]
        )
        return result.exit_code, result.output

    code, out = dry_run(10_000, 11)
    assert code == 2 and "110,000 cells" in out and "cap of 100,000 cells" in out, out
    assert "--max-cells" in out
    code, out = dry_run(5, 1, "--max-cells", "4")
    assert code == 2 and "cap of 4 cells" in out, out
    code, out = dry_run(5, 1, "--max-cells", "5")
    assert code == 0 and "5 cells" in out, out
    code, out = dry_run(5, 1, "--max-cells", "10000001")
    assert code == 2 and "10000000" in out, out


def test_the_cli_default_cap_is_the_library_one() -> None:
    import inspect

    assert inspect.signature(run_command).parameters["max_cells"].default == MAX_CELLS


# --- killed sweeps --------------------------------------------------------------------


def _children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_no_worker_outlives_a_killed_sweep(sig: signal.Signals, tmp_path: Path) -> None:
    spec = tmp_path / "kill.toml"
    spec.write_text('name = "kill"\ntraces = ["synthetic-continuum"]\nmode = "replay"\n'
                    'schedulers = ["fgd", "bestfit", "random"]\nseeds = 40\n')  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-m", "twinsched.cli", "sweep", "run", str(spec), "--jobs", "2",
           "--db", f"sqlite:///{tmp_path / 's.db'}"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    workers: set[int] = set()
    try:
        while len(workers) < 2 and time.monotonic() < deadline:
            assert proc.poll() is None, "the sweep ended before it was killed"
            workers = _children(proc.pid)
            time.sleep(0.1)
        time.sleep(1)  # the workers are inside their first cells
        workers = _children(proc.pid)
    finally:
        proc.send_signal(sig)
        proc.wait(60)
    assert len(workers) >= 2
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [w for w in workers if _alive(w)]
    for pid in survivors:  # do not leave them to the next test; fail after
        os.kill(pid, signal.SIGKILL)
    assert not survivors, f"workers {survivors} outlived the sweep killed by {sig.name}"
    if sig == signal.SIGTERM:
        assert proc.returncode == 130  # reported as interrupted, as Ctrl-C
