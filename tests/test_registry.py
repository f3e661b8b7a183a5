"""The generic registry: unique names, lazy in-tree tables, entry points, helpful unknowns."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from twinsched.errors import DuplicateNameError, TwinschedError, UnknownNameError
from twinsched.registry import Registry, load

GROUP = "twinsched.test_registry_plugins"


def _write_module(root: Path, name: str, body: str) -> None:
    (root / f"{name}.py").write_text(body)


def test_duplicates_are_refused_and_the_first_stays() -> None:
    reg: Registry[Callable[[], int]] = Registry("thing", {"one": (lambda: 1, "the first")})
    with pytest.raises(DuplicateNameError, match="thing 'one' is already registered"):
        reg.register("one", lambda: 2)
    reg.register("two", lambda: 2, "the second")
    with pytest.raises(TwinschedError, match="already registered"):
        reg.register("two", lambda: 3)
    assert reg.create("one") == 1 and reg.create("two") == 2
    assert reg.describe() == {"one": "the first", "two": "the second"}


def test_unknown_name_lists_the_known_ones() -> None:
    reg: Registry[int] = Registry("colour", {"red": (1, ""), "blue": (2, "")})
    with pytest.raises(UnknownNameError, match=r"unknown colour 'green'; known: blue, red"):
        reg.get("green")
    assert "red" in reg and "green" not in reg


def test_in_tree_table_is_imported_on_first_get_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_module(tmp_path, "registry_lazy_plugin", "def make():\n    return 'made'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[Callable[[], str]] = Registry(
        "plugin", {"lazy": ("registry_lazy_plugin:make", "imported when used")}
    )
    assert reg.names() == ["lazy"] and reg.describe() == {"lazy": "imported when used"}
    assert "registry_lazy_plugin" not in sys.modules
    assert reg.create("lazy") == "made"
    assert "registry_lazy_plugin" in sys.modules
    monkeypatch.delitem(sys.modules, "registry_lazy_plugin")


def test_entry_points_are_loaded_and_never_override_built_ins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_module(tmp_path, "registry_ep_plugin", "def make():\n    return 'from plugin'\n")
    info = tmp_path / "registry_ep_plugin-1.0.dist-info"
    info.mkdir()
    metadata = "Metadata-Version: 2.1\nName: registry-ep-plugin\nVersion: 1.0\n"
    (info / "METADATA").write_text(metadata)
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\nextra = registry_ep_plugin:make\nbuiltin = registry_ep_plugin:make\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[Callable[[], str]] = Registry(
        "plugin", {"builtin": (lambda: "built in", "in the tree")}, GROUP
    )
    assert reg.names() == ["builtin", "extra"]
    assert reg.describe()["extra"] == "plug-in from registry_ep_plugin:make"
    assert reg.create("extra") == "from plugin"
    assert reg.create("builtin") == "built in"
    monkeypatch.delitem(sys.modules, "registry_ep_plugin", raising=False)


def test_load_names_module_and_attribute() -> None:
    assert load("os.path:join") is __import__("os").path.join
    with pytest.raises(TwinschedError, match=r"expected 'package\.module:attribute'"):
        load("os.path.join")
