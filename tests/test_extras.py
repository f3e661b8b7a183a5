"""The optional-import guard names the extra to install."""

from __future__ import annotations

import sys

import pytest

from twinsched.errors import MissingExtraError, TwinschedError
from twinsched.extras import needs, require


def test_require_returns_the_module_or_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert require("json", "none", "unused") is sys.modules["json"]
    monkeypatch.setitem(sys.modules, "twinsched_missing_dep", None)
    with pytest.raises(MissingExtraError, match=r"X needs Y: pip install 'twinsched\[z\]'") as e:
        require("twinsched_missing_dep", "z", "X needs Y")
    assert isinstance(e.value, ImportError) and isinstance(e.value, TwinschedError)


def test_needs_turns_a_failed_import_into_the_extra_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "twinsched_missing_dep", None)
    hint = r"X needs Y: pip install 'twinsched\[z\]'"
    with pytest.raises(MissingExtraError, match=hint) as e, needs("z", "X needs Y"):
        import twinsched_missing_dep  # type: ignore[import-not-found]
    assert isinstance(e.value.__cause__, ImportError)
    # An inner guard's message stays.
    with pytest.raises(MissingExtraError, match="inner"), needs("z", "outer"), needs("z", "inner"):
        import twinsched_missing_dep  # noqa: F401
