"""The parsed-trace cache: a hit is the parsed scenario, column for column; an edited source
file or a new parser misses; a damaged file is rebuilt, never trusted; writers racing on one
key leave one whole file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.traces.test_alibaba_gpu_2023 import NODES, POD_HEADER, write
from twinsched.model.cluster import Scenario
from twinsched.model.columns import same_scenario
from twinsched.sim.scenarios import cached_scenario
from twinsched.traces import alibaba_gpu_2023 as ali
from twinsched.traces import cache, cachedir
from twinsched.traces import registry as traces

SRC = Path(__file__).resolve().parents[2] / "src"
TRACE = "alibaba-gpu-2023"
PODS = POD_HEADER + "p0,1000,1024,1,500,\np1,2000,2048,0,0,\n"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cachedir.ENV_VAR, str(folder))
    return folder


def with_src() -> dict[str, str]:
    """The environment of a child process that imports this checkout."""
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.npz"))


def assert_identical(a: Scenario, b: Scenario) -> None:
    """Every column the same, dtypes and writeability included, and the same name and meta."""
    assert same_scenario(a, b) == []
    assert (a.name, a.meta, a.labels.names) == (b.name, b.meta, b.labels.names)
    for part in ("nodes", "pods", "links"):
        x, y = getattr(a, part), getattr(b, part)
        for name in x.__dataclass_fields__:
            u, v = getattr(x, name), getattr(y, name)
            assert type(u) is type(v), f"{part}.{name}"
            if isinstance(u, np.ndarray):
                assert u.flags.writeable == v.flags.writeable, f"{part}.{name}"
            elif isinstance(u, tuple):
                assert all(type(s) is str for s in v), f"{part}.{name}"


def test_a_hit_is_the_parsed_scenario_column_for_column(cache_dir: Path) -> None:
    for variant in ("default", "gpuspec33"):  # gpuspec33: model masks set
        parsed = traces.load(TRACE, variant)
        hit = traces.load(TRACE, variant)
        assert_identical(parsed, ali.load(variant))  # what the reader itself makes
        assert_identical(hit, parsed)
        assert hit is not parsed
    assert len(entries(cache_dir)) == 2


def test_a_second_process_parses_nothing(cache_dir: Path) -> None:
    """The hit reads columns only: the CSV parser's pandas is never imported."""
    code = (
        "import sys\nfrom twinsched.traces import registry\n"
        "s = registry.load('alibaba-gpu-2023', 'default')\n"
        "print(s.pods.n, 'pandas' in sys.modules)\n"
    )
    env = with_src()

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, check=True, timeout=120)  # fmt: skip
        return done.stdout.split()

    assert run() == ["8152", "True"]  # the first parses
    assert run() == ["8152", "False"]  # the second reads the cache


def test_an_edited_source_file_misses(tmp_path: Path, cache_dir: Path) -> None:
    root = write(tmp_path, NODES, PODS)
    first = traces.load(TRACE, "default", root)
    pods = root / "alibaba_gpu_v2023" / "csv" / "openb_pod_list_default.csv"
    pods.write_text(PODS.replace("p1,2000", "p1,3000"))  # same size, same name
    os.utime(pods, ns=(0, 0))  # and an old time: only the contents tell
    second = traces.load(TRACE, "default", root)
    assert first.pods.cpu_milli.tolist() == [1000, 2000]
    assert second.pods.cpu_milli.tolist() == [1000, 3000]
    assert len(entries(cache_dir)) == 2


def test_a_new_parser_version_misses(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path, NODES, PODS)
    traces.load(TRACE, "default", root)
    monkeypatch.setattr(ali, "PARSER_VERSION", ali.PARSER_VERSION + 1)
    traces.load(TRACE, "default", root)
    assert len(entries(cache_dir)) == 2


@pytest.mark.parametrize(
    "damage", ["truncated", "garbage", "empty", "column changed", "meta changed"]
)
def test_a_damaged_file_is_rebuilt(tmp_path: Path, cache_dir: Path, damage: str) -> None:
    root = write(tmp_path, NODES, PODS)
    parsed = traces.load(TRACE, "default", root)
    (path,) = entries(cache_dir)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(data[:100] + bytes(255 - b for b in data[100:400]) + data[400:])
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a whole, readable file (CRCs right) whose columns or header no longer hash right
        with np.load(path) as old:
            arrays = {k: old[k] for k in old.files}
        if damage == "column changed":
            arrays["pods.cpu_milli"] = arrays["pods.cpu_milli"] + 1
        else:
            text = bytes(arrays["header"]).replace(b'"variant": "default"', b'"variant": "cpu050"')
            assert text != bytes(arrays["header"])
            arrays["header"] = np.frombuffer(text, dtype=np.uint8)
        with path.open("wb") as f:
            np.savez(f, **arrays)
    assert cache.read_scenario(path) is None  # never trusted
    assert_identical(traces.load(TRACE, "default", root), parsed)
    rebuilt = cache.read_scenario(path)
    assert rebuilt is not None  # rebuilt, whole
    assert_identical(rebuilt, parsed)


def test_no_flipped_byte_is_trusted(tmp_path: Path, cache_dir: Path) -> None:
    """Flip one byte anywhere (headers, CRCs, columns, the JSON): the load is still the parse."""
    root = write(tmp_path, NODES, PODS)
    parsed = traces.load(TRACE, "default", root)
    (path,) = entries(cache_dir)
    data = path.read_bytes()
    for offset in range(0, len(data), max(1, len(data) // 150)):
        path.write_bytes(data[:offset] + bytes([data[offset] ^ 0x5A]) + data[offset + 1 :])
        found = cache.read_scenario(path)
        if found is not None:  # a byte no reader looks at (a zip field): still the parse
            assert_identical(found, parsed)
        assert_identical(traces.load(TRACE, "default", root), parsed)


def test_writers_racing_on_one_key_leave_one_whole_file(tmp_path: Path, cache_dir: Path) -> None:
    root = write(tmp_path, NODES, PODS)
    parsed = traces.load(TRACE, "default", root)
    (path,) = entries(cache_dir)
    code = (
        "import sys\nfrom pathlib import Path\nfrom twinsched.traces import cache, registry\n"
        f"s = registry.READERS.create('{TRACE}', 'default', sys.argv[2], 0)\n"
        "for _ in range(40):\n"
        "    assert cache.write_scenario(Path(sys.argv[1]), s)\n"
        "    assert cache.read_scenario(Path(sys.argv[1])) is not None\n"
    )
    env = with_src()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(root)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors[-2000:]
    assert [p.name for p in cache_dir.iterdir()] == [path.name]  # no temporary file left
    found = cache.read_scenario(path)
    assert found is not None
    assert_identical(found, parsed)


def test_a_folder_that_cannot_be_written_costs_the_parse_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(cachedir.ENV_VAR, str(blocked / "cache"))
    root = write(tmp_path, NODES, PODS)
    assert traces.load(TRACE, "default", root).pods.n == 2
    monkeypatch.setenv(cachedir.ENV_VAR, cachedir.OFF)
    assert cachedir.cache_dir() is None
    assert traces.load(TRACE, "default", root).pods.n == 2


def test_meta_json_would_change_is_not_cached(tmp_path: Path) -> None:
    root = write(tmp_path, NODES, PODS)
    scenario = ali.load("default", root)
    odd = Scenario(scenario.name, scenario.nodes, scenario.pods, scenario.links,
                   scenario.labels, {"pair": (1, 2)})  # fmt: skip
    assert not cache.write_scenario(tmp_path / "c" / "x.npz", odd)
    assert not (tmp_path / "c" / "x.npz").exists()


def test_the_same_scenario_however_db_is_spelled(cache_dir: Path) -> None:
    """``db`` left out or None: one load, one object (the runner passes None, the CLI not)."""
    assert cached_scenario(TRACE, "cpu050", None) is cached_scenario(TRACE, "cpu050", None, None)
