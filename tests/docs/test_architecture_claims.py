"""Claims of docs/architecture.md that a test can keep true (issue 32)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "twinsched"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
HOOKS = {"on_events", "on_sample", "on_decision"}


def _observer_classes() -> dict[str, str]:
    """Every concrete class in src that implements an observer hook: name -> module path."""
    found: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            protocol = any(getattr(b, "id", "") == "Protocol" for b in node.bases)
            methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            if methods & HOOKS and not protocol and node.name != "BaseObserver":
                found[node.name] = path.relative_to(SRC).as_posix()
    return found


def test_every_observer_is_in_the_documented_list() -> None:
    observers = _observer_classes()
    assert len(observers) >= 5  # the scan finds them (ProgressObserver, LiveState, ...)
    listed = dict(re.findall(r"^- `(\w+)` in `([\w/.]+)`", DOC, flags=re.M))
    missing = {name: where for name, where in observers.items() if listed.get(name) != where}
    assert not missing, f"observers missing from docs/architecture.md: {missing}"
    gone = sorted(set(listed) - set(observers))
    assert not gone, f"docs/architecture.md lists observers that no longer exist: {gone}"
