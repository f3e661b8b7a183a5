"""The file-based model registry: versions, atomic writes, checksums, clear errors."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from twinsched.errors import UnknownNameError
from twinsched.scheduling.ai.model_store import (
    CARD,
    ENV_VAR,
    ModelError,
    ModelIntegrityError,
    ModelRegistry,
    default_root,
    parse_ref,
)

DATA = hashlib.sha256(b"training data").hexdigest()


def _register(reg: ModelRegistry, name: str = "m", payload: bytes = b"weights") -> int:
    def save(folder: Path) -> None:
        (folder / "model.bin").write_bytes(payload)
        (folder / "sub").mkdir()
        (folder / "sub" / "meta.json").write_text("{}")

    card = reg.register(name, "test.kind", save, {"lr": 0.1}, DATA, {"alloc": 91.5})
    return card.version


def test_round_trip_and_auto_increment(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    assert [_register(reg), _register(reg, payload=b"v2"), _register(reg, "other")] == [1, 2, 1]
    card = reg.get("m")
    assert (card.name, card.version, card.ref, card.kind) == ("m", 2, "m@2", "test.kind")
    assert (card.spec, card.metrics, card.data_checksum) == ({"lr": 0.1}, {"alloc": 91.5}, DATA)
    assert (card.path / "model.bin").read_bytes() == b"v2"
    assert set(card.files) == {"model.bin", "sub/meta.json"}
    assert {"python", "numpy", "twinsched"} <= set(card.frameworks)
    assert card.created.endswith("+00:00")
    on_disk = json.loads((tmp_path / "m" / "2" / CARD).read_text())
    assert on_disk["version"] == 2 and on_disk["artifact_sha256"] == card.artifact_sha256
    assert reg.get("m", 1).path == tmp_path / "m" / "1"
    assert [c.ref for c in reg.list()] == ["m@1", "m@2", "other@1"]
    assert [c.ref for c in reg.list("m")] == ["m@1", "m@2"]
    assert reg.names() == ["m", "other"]


def test_bytes_mapping_is_an_artifact(tmp_path: Path) -> None:
    card = ModelRegistry(tmp_path).register("b", "k", {"model.pt": b"\x00\x01"}, {}, DATA)
    assert (card.path / "model.pt").read_bytes() == b"\x00\x01"
    with pytest.raises(ModelError, match="plain file name"):
        ModelRegistry(tmp_path).register("b", "k", {"../escape.pt": b""}, {}, DATA)
    assert not (tmp_path / "escape.pt").exists()


def test_delete_a_version_then_the_name(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    for _ in range(3):
        _register(reg)
    assert [c.ref for c in reg.delete("m", 3)] == ["m@3"]
    assert reg.versions("m") == [1, 2]
    assert _register(reg) == 4, "a deleted version's number is not reused"
    assert [c.ref for c in reg.delete("m")] == ["m@1", "m@2", "m@4"]
    assert reg.names() == [] and list(tmp_path.iterdir()) == []
    assert _register(reg) == 1


def test_failing_save_leaves_no_version(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)

    def crash(folder: Path) -> None:
        (folder / "model.bin").write_bytes(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        reg.register("m", "k", crash, {}, DATA)
    assert reg.versions("m") == [] and reg.names() == []
    assert [p.name for p in (tmp_path / "m").iterdir()] == [], "temporary folder removed"
    with pytest.raises(ModelError, match="no artifact file"):
        reg.register("m", "k", lambda folder: None, {}, DATA)
    with pytest.raises(ModelError, match="reserved"):
        reg.register("m", "k", {CARD: b"{}"}, {}, DATA)
    assert _register(reg) == 1


def test_concurrent_registrations_get_distinct_versions(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        versions = list(pool.map(lambda i: _register(ModelRegistry(tmp_path)), range(16)))
    assert sorted(versions) == list(range(1, 17))
    assert ModelRegistry(tmp_path).versions("m") == list(range(1, 17))


def test_verify_detects_altered_missing_and_extra_files(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    _register(reg)
    assert reg.verify("m") == []
    card = reg.get("m", verify=True)
    (card.path / "model.bin").write_bytes(b"tampered")
    found, expected = (hashlib.sha256(b).hexdigest()[:12] for b in (b"tampered", b"weights"))
    assert reg.verify("m") == [f"m@1: file 'model.bin': sha256 {found}… does not match {expected}…"]
    with pytest.raises(ModelIntegrityError, match=r"model\.bin"):
        reg.get("m", verify=True)
    (card.path / "model.bin").unlink()
    (card.path / "extra.bin").write_bytes(b"")
    problems = reg.verify("m", 1)
    assert any("'model.bin' is missing" in p for p in problems)
    assert any("'extra.bin' is not on the card" in p for p in problems)


def test_unknown_names_and_versions_list_the_known_ones(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    _register(reg, "alpha")
    _register(reg, "beta")
    with pytest.raises(UnknownNameError, match=r"unknown model 'gamma'; known: alpha, beta"):
        reg.get("gamma")
    with pytest.raises(UnknownNameError, match=r"unknown model version 'alpha@7'; known: alpha@1"):
        reg.get("alpha", 7)
    with pytest.raises(UnknownNameError, match="known: alpha, beta"):
        reg.delete("gamma")


@pytest.mark.parametrize("bad", ["", "../x", "a/b", ".hidden", "a@1", "a b", "x" * 101, "a..b"])
def test_unsafe_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ModelError, match="bad model name"):
        ModelRegistry(tmp_path).register(bad, "k", {"f": b""}, {}, DATA)


def test_bad_input_is_refused(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    with pytest.raises(ModelError, match="SHA-256"):
        reg.register("m", "k", {"f": b""}, {}, "not-a-checksum")
    with pytest.raises(ModelError, match="field 'metrics' is not JSON"):
        reg.register("m", "k", {"f": b""}, {}, DATA, {"bad": object()})
    with pytest.raises(ModelError, match="kind"):
        reg.register("m", "", {"f": b""}, {}, DATA)
    assert reg.names() == []


def test_corrupt_card_names_file_and_field(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path)
    _register(reg)
    path = tmp_path / "m" / "1" / CARD
    raw = json.loads(path.read_text())
    del raw["kind"]
    path.write_text(json.dumps(raw))
    with pytest.raises(ModelError, match=rf"{path}: field 'kind': missing"):
        reg.get("m")
    path.write_text("{not json")
    with pytest.raises(ModelError, match="unreadable model card"):
        reg.get("m")
    cards, bad = reg.scan()  # one bad card hides no other: list() skips it, scan() names it
    assert cards == reg.list() == [] and len(bad) == 1 and "unreadable model card" in str(bad[0])


def test_root_from_argument_then_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert default_root() == tmp_path / "env"
    assert ModelRegistry().root == tmp_path / "env"
    assert ModelRegistry(tmp_path / "arg").root == tmp_path / "arg"
    monkeypatch.delenv(ENV_VAR)
    assert default_root().parts[-2:] == ("twinsched", "models")


def test_references() -> None:
    assert parse_ref("m") == ("m", None)
    assert parse_ref("m@3") == ("m", 3)
    assert parse_ref("m@latest") == ("m", None)
    with pytest.raises(ModelError, match="bad model reference"):
        parse_ref("m@x")
