"""Commands of the model registry: ``twinsched models list/show/delete/verify``.

Mount in the main command with ``app.add_typer(models.app, name="models")``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from twinsched.cli.console import expected_errors, make_console
from twinsched.cli.options import ModelsDirOpt
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.scheduling.ai.model_store import ModelCard, ModelError
    from twinsched.scheduling.ai.shipped import Catalog

app = typer.Typer(
    help="Registered models: list, show, delete, verify (files under --models-dir, and the "
    "models shipped with twinsched).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

Ref = Annotated[str, typer.Argument(help="NAME or NAME@VERSION (latest without a version).")]


@app.command("list")
def list_command(
    name: Annotated[str | None, typer.Argument(help="Only this model's versions.")] = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Every registered version, then the models shipped with twinsched: kind, creation time,
    metrics, checksums and source; a card that cannot be read is a warning row naming its file
    and field (exit status 1)."""
    from twinsched.scheduling.ai.card_text import format_metrics

    registry, cards, bad = _scan(models_dir, name, None)
    table = Table("name", "version", "kind", "created", "metrics", "data", "artifact", "source")
    for c in cards:
        table.add_row(
            c.name, str(c.version), c.kind, c.created, format_metrics(c.metrics) or "-",
            c.data_checksum[:12], c.artifact_sha256[:12], _source(registry, c),
        )  # fmt: skip
    for exc in bad:
        table.add_row(*_where(exc), "[yellow]bad card", "", str(exc), "", "", "")
    make_console().print(table if cards or bad else f"no models in {registry.root}")
    if bad:
        raise typer.Exit(1)


def _scan(
    models_dir: Path | None, name: str | None, number: int | None
) -> tuple[Catalog, list[ModelCard], list[ModelError]]:
    """The catalog, the readable cards (of ``name``, of one version) and the bad ones."""
    from twinsched.scheduling.ai.shipped import Catalog

    catalog = Catalog(models_dir)
    with expected_errors():
        if number is not None:
            return catalog, [catalog.get(name or "", number)], []
        cards, bad = catalog.scan(name)  # unknown names list the known ones
    return catalog, cards, bad


def _source(catalog: Catalog, card: ModelCard) -> str:
    from twinsched.scheduling.ai.shipped import is_shipped

    if not is_shipped(card):
        return "user"
    return "shipped (hidden by yours)" if catalog.hidden(card) else "shipped"


def _where(exc: ModelError) -> tuple[str, str]:
    """Model name and version of a bad card's error (its folder), else blanks."""
    path = getattr(exc, "path", None)
    return (path.parent.parent.name, path.parent.name) if isinstance(path, Path) else ("?", "?")


@app.command("show")
def show_command(ref: Ref, models_dir: ModelsDirOpt = None) -> None:
    """One version's card: provenance, training spec, metrics, files and framework versions."""
    from twinsched.scheduling.ai.model_store import parse_ref
    from twinsched.scheduling.ai.shipped import Catalog

    catalog = Catalog(models_dir)
    with expected_errors():
        card = catalog.get(*parse_ref(ref))
    table = Table("field", "value", show_header=False)
    rows = [*_card_rows(card), ("source", _source(catalog, card))]
    for key, value in rows + _learned_rows(card, models_dir):
        table.add_row(key, value)
    make_console().print(table)


def _learned_rows(card: ModelCard, models_dir: Path | None) -> list[tuple[str, str]]:
    """For a policy with tie gates: what it learned, one gate per row."""
    if card.kind != "twinsched.policy":
        return []
    from twinsched.scheduling.ai.serving import create_ai_scheduler
    from twinsched.scheduling.ai.ties import TieGates

    try:
        ties = getattr(create_ai_scheduler(f"ai:{card.ref}", models_dir), "ties", None)
    except TwinschedError as exc:  # the card is still worth showing
        return [("policy", f"cannot be loaded: {exc}")]
    if not isinstance(ties, TieGates):
        return []
    return [("tie gates" if i == 0 else "", line) for i, line in enumerate(ties.describe())]


@app.command("delete")
def delete_command(
    ref: Ref,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Remove one version (NAME@VERSION) or a model with all its versions (NAME); the models
    shipped with twinsched cannot be removed."""
    from twinsched.scheduling.ai.model_store import parse_ref
    from twinsched.scheduling.ai.shipped import Catalog

    with expected_errors():
        name, number = parse_ref(ref)
        registry = Catalog(models_dir).writable(name)
        found = registry.resolve(name, number)  # unknown names and versions list the known ones
        what = f"{name}@{found}" if number is not None else f"all of {name}"
        count = 1 if number is not None else len(registry.versions(name))
    if not yes:
        typer.confirm(f"delete {what} ({count} version(s))?", abort=True)
    with expected_errors():
        registry.delete(name, number)
    make_console().print(f"deleted {what}")


@app.command("verify")
def verify_command(
    ref: Annotated[str | None, typer.Argument(help="NAME[@VERSION]; all when omitted.")] = None,
    models_dir: ModelsDirOpt = None,
) -> None:
    """Check artifact files against their cards' SHA-256; exit status 1 if any differ."""
    from twinsched.scheduling.ai.model_store import parse_ref

    with expected_errors():
        name, number = parse_ref(ref) if ref is not None else (None, None)
    registry, cards, bad = _scan(models_dir, name, number)
    results = [(card.ref, registry.check(card)) for card in cards]
    results += [("@".join(_where(exc)), [str(exc)]) for exc in bad]
    table = Table("model", "status")
    for what, problems in results:
        table.add_row(what, "ok" if not problems else "[red]" + "; ".join(problems))
    make_console().print(table if results else f"no models in {registry.root}")
    if any(problems for _, problems in results):
        raise typer.Exit(1)


def _card_rows(card: ModelCard) -> list[tuple[str, str]]:
    from twinsched.scheduling.ai.card_text import format_value

    rows = [
        ("name", card.name),
        ("version", str(card.version)),
        ("kind", card.kind),
        ("created", card.created),
        ("folder", str(card.path)),
        ("data checksum", card.data_checksum),
        ("artifact sha256", card.artifact_sha256),
        ("spec", json.dumps(card.spec, sort_keys=True)),
    ]
    rows += [(f"metric {k}", format_value(v)) for k, v in sorted(card.metrics.items())]
    rows += [(f"file {f}", digest) for f, digest in sorted(card.files.items())]
    rows += [(f"version of {k}", v) for k, v in sorted(card.frameworks.items())]
    return rows
