"""The optional-import guard names the extra to install."""

from __future__ import annotations

import sys

import pytest

from twinsched.errors import MissingExtraError, TwinschedError
from twinsched.extras import require


def test_require_returns_the_module_or_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    assert require("json", "none", "unused") is sys.modules["json"]
    monkeypatch.setitem(sys.modules, "twinsched_missing_dep", None)
    with pytest.raises(MissingExtraError, match=r"X needs Y: pip install 'twinsched\[z\]'") as e:
        require("twinsched_missing_dep", "z", "X needs Y")
    assert isinstance(e.value, ImportError) and isinstance(e.value, TwinschedError)
