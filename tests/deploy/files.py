"""The deploy/ files as data, and the real CLI's parser for the commands they run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main
import yaml

from twinsched.cli import app

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUBERNETES = DEPLOY / "kubernetes"


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """Every document of ``deploy/kubernetes/*.yaml`` as ``(file, document)``."""
    docs = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        docs += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def find(kind: str, name: str) -> dict[str, Any]:
    """The manifest of that kind and name."""
    hits = [d for _, d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(hits) == 1, f"{kind}/{name}: {len(hits)} manifests"
    return hits[0]


def parse_cli(args: list[str]) -> tuple[str, dict[str, Any]]:
    """``twinsched ARGS`` parsed by the real command line (types, ranges, unknown options
    refused) without running it: the command's path and its parameters."""
    command: Any = typer.main.get_command(app)
    context = command.make_context("twinsched", list(args))
    path = ["twinsched"]
    while hasattr(command, "resolve_command"):  # a group (typer ships its own click)
        rest = [*context._protected_args, *context.args]
        name, sub, rest = command.resolve_command(context, rest)
        assert sub is not None and name is not None
        path.append(name)
        context = sub.make_context(name, rest, parent=context)
        command = sub
    return " ".join(path), dict(context.params)


def interpolate(value: str, env: dict[str, str] | None = None) -> str:
    """A compose value with its ``${NAME:-default}`` and ``${NAME:?message}`` variables
    replaced from ``env`` (none given: every default)."""
    values = env or {}

    def one(match: re.Match[str]) -> str:
        name, how, word = match.group(1), match.group(2), match.group(3)
        if name in values:
            return values[name]
        assert how == ":-", f"{name} has no default: {word}"
        return word

    return re.sub(r"\$\{([A-Z_]+)(:-|:\?)([^}]*)\}", one, value)
