"""docs/architecture.md names files that exist: a moved or renamed module fails here.

Every span in backticks that is a file path (``scheduling/controller.py``, ``pyproject.toml``)
or a folder (``twin/core/``) must exist under ``src/twinsched/`` or under the repository
root. Spans with a placeholder (``tests/<package>/test_<module>.py``) are not paths.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "twinsched"
PAGE = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"[\w.-]+(/[\w.-]+)*(\.(py|md|toml)|/)")


def named_paths(text: str) -> list[str]:
    """The backticked spans of ``text`` that are file or folder paths."""
    return [span for span in re.findall(r"`([^`\n]+)`", text) if PATH.fullmatch(span)]


def test_every_named_path_exists() -> None:
    paths = named_paths(PAGE.read_text())
    assert len(paths) >= 40, "the page names the files a newcomer edits"
    missing = [p for p in paths if not ((PACKAGE / p).exists() or (ROOT / p).exists())]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_paths_are_told_from_other_spans() -> None:
    text = "`sim/fillup.py`, `twin/core/`, `pyproject.toml`, `tests/<p>/test_<m>.py`, `a.b`"
    assert named_paths(text) == ["sim/fillup.py", "twin/core/", "pyproject.toml"]
