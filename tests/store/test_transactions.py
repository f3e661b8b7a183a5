"""Nothing lost, nothing half-written: bad rows, replace, names, concurrent imports."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest

from twinsched.errors import TraceFormatError
from twinsched.model.columns import same_scenario
from twinsched.store import (
    ScenarioExistsError,
    ScenarioNotFoundError,
    delete_scenario,
    import_scenario,
    list_scenarios,
    load_scenario,
    scenario_info,
)


def _break_line(source: Path, target: Path, line: int, old: str, new: str) -> Path:
    """A copy of ``source`` (in tmp) whose line ``line`` has ``old`` replaced by ``new``."""
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    assert old in lines[line - 1], lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines), encoding="utf-8")
    return target


def _snapshot(db: str) -> list[tuple[str, int, str]]:
    return [(i.name, i.version, i.checksum) for i in list_scenarios(db)]


def test_bad_alibaba_row_in_a_later_variant_leaves_the_store_unchanged(
    db: str, data: Path, tmp_path: Path
) -> None:
    csv = data / "alibaba_gpu_v2023" / "csv"
    folder = tmp_path / "openb"
    folder.mkdir()
    for f in ("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv"):
        (folder / f).symlink_to(csv / f)
    source = csv / "openb_pod_list_cpu050.csv"
    row = source.read_text().split("\n")[5000 - 1]
    cpu = row.split(",")[1]
    _break_line(source, folder / "openb_pod_list_cpu050.csv", 5000, f",{cpu},", ",lots,")
    import_scenario("synthetic", "continuum", "keep", db=db, options={"pods": "100"})
    before = _snapshot(db)
    with pytest.raises(TraceFormatError) as caught:
        import_scenario(
            "alibaba-gpu-2023", folder, "ali", db=db, options={"variants": "default,cpu050"}
        )
    assert caught.value.line == 5000 and caught.value.field == "cpu_milli"
    assert "openb_pod_list_cpu050.csv:5000: field 'cpu_milli'" in str(caught.value)
    assert _snapshot(db) == before


@pytest.mark.parametrize(
    ("kind", "source", "line", "old", "new", "field"),
    [
        ("swf", "pwa_swf/lublin_256.swf", 500, " 1 -1 -1 -1 0", " x -1 -1 -1 0", "status"),
        ("supercloud", "mit_supercloud_sample/slurm-log-queueing-clean.csv.gz", 4000,
         "['", "[", "nodelist"),
        ("alibaba-gpu-2025-dlrm", "alibaba_gpu_v2025_dlrm/disaggregated_DLRM_trace.csv", 20000,
         ",CN,", ",XN,", "role"),
    ],
)  # fmt: skip
def test_bad_row_names_file_line_and_field(
    sqlite_url: str,
    data: Path,
    tmp_path: Path,
    kind: str,
    source: str,
    line: int,
    old: str,
    new: str,
    field: str,
) -> None:
    import_scenario("synthetic", "continuum", "bad", db=sqlite_url, options={"pods": "50"})
    before = _snapshot(sqlite_url)
    target = tmp_path / Path(source).name.removesuffix(".gz")
    broken = _break_line(data / source, target, line, old, new)
    with pytest.raises(TraceFormatError) as caught:
        import_scenario(kind, broken, "bad", db=sqlite_url, replace=True)
    assert (caught.value.line, caught.value.field) == (line, field)
    assert str(broken) in str(caught.value)
    assert _snapshot(sqlite_url) == before  # replace=True did not delete the old one


def test_bad_twin_json_field_names_its_line(sqlite_url: str, tmp_path: Path) -> None:
    from twinsched.store import export_scenario

    import_scenario("synthetic", "continuum", "s", db=sqlite_url, options={"pods": "20"})
    file = export_scenario("s", tmp_path / "s.json", db=sqlite_url)
    lines = file.read_text().split("\n")
    k = next(i for i, t in enumerate(lines) if '"cpu_milli"' in t and "hardware" not in t)
    lines[k] = lines[k].split(":")[0] + ": 0,"
    file.write_text("\n".join(lines))
    with pytest.raises(TraceFormatError) as caught:
        import_scenario("twin-json", file, "t", db=sqlite_url)
    assert caught.value.line == k + 1
    assert caught.value.field.endswith("hardware.cpu_milli")


def test_reimport_needs_replace_and_bumps_the_version(db: str) -> None:
    import_scenario("synthetic", "continuum", "s", db=db, options={"pods": "100"})
    with pytest.raises(ScenarioExistsError, match="replace"):
        import_scenario("synthetic", "continuum", "s", db=db, options={"pods": "120"})
    assert scenario_info("s", db).n_pods == 100
    [info] = import_scenario(
        "synthetic", "continuum", "s", db=db, replace=True, options={"pods": "120"}
    )
    assert (info.version, info.n_pods) == (2, 120)
    assert load_scenario("s", db).pods.n == 120


def test_delete_and_not_found(db: str) -> None:
    import_scenario("synthetic", "continuum", "a", db=db, options={"pods": "10"})
    import_scenario("synthetic", "continuum", "b", db=db, options={"pods": "10"})
    delete_scenario("a", db)
    with pytest.raises(ScenarioNotFoundError, match="no scenario 'a' in the store; stored: b"):
        load_scenario("a", db)
    with pytest.raises(ScenarioNotFoundError):
        delete_scenario("a", db)
    assert [i.name for i in list_scenarios(db)] == ["b"]


def test_unicode_names_and_infinities(db: str) -> None:
    from dataclasses import replace

    from twinsched.store import save_scenarios
    from twinsched.traces import synthetic

    base = synthetic.continuum(pods=30)
    names = tuple(f"pöd-{i}-\u6f22\t\\\n\\N{'x' * (i % 7)}" for i in range(base.pods.n))
    scenario = replace(base, name="ünï", pods=replace(base.pods, names=names))
    save_scenarios([scenario], source="test", db=db)
    again = load_scenario("ünï", db)
    assert same_scenario(scenario, again) == []


def test_two_concurrent_imports_into_postgresql(pg_url: str) -> None:
    """Different names: both land. The same name: one lands, the other fails cleanly."""
    errors: list[BaseException] = []

    def run(name: str, seed: int) -> None:
        try:
            import_scenario("synthetic", "continuum", name, db=pg_url,
                            options={"seed": str(seed), "pods": "3000"})  # fmt: skip
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in (("x", 1), ("y", 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [i.name for i in list_scenarios(pg_url)] == ["x", "y"]

    threads = [threading.Thread(target=run, args=("z", s)) for s in (3, 4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 1 and isinstance(errors[0], ScenarioExistsError)
    stored = load_scenario("z", pg_url)
    assert stored.meta["params"]["seed"] in (3, 4)  # type: ignore[index]
    assert scenario_info("z", pg_url).version == 1
    assert _orphans(pg_url) == 0


def _orphans(db: str) -> int:
    import sqlalchemy as sa

    from twinsched.store.db import engine_for

    with engine_for(db).connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM pods WHERE scenario_id NOT IN (SELECT id FROM scenarios)"
                )
            ).scalar_one()
        )


def test_a_failure_while_writing_rolls_back_earlier_scenarios(db: str) -> None:
    from dataclasses import replace

    from twinsched.errors import TwinschedError
    from twinsched.store import save_scenarios
    from twinsched.traces import synthetic

    good = synthetic.continuum(pods=200)
    bad = replace(synthetic.continuum(pods=10), name="bad", meta={"x": object()})
    with pytest.raises(TwinschedError, match="not plain JSON"):
        save_scenarios([replace(good, name="good"), bad], source="test", db=db)
    assert list_scenarios(db) == []
    assert _orphans(db) == 0
