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
from twinsched.errors import TwinschedError

if TYPE_CHECKING:
    from twinsched.scheduling.ai.model_store import ModelCard

app = typer.Typer(
    help="Registered models: list, show, delete, verify (files under --models-dir).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

ModelsDir = Annotated[
    Path | None,
    typer.Option(
        "--models-dir",
        help="Registry folder (default: $TWINSCHED_MODELS, else the user data folder).",
    ),
]
Ref = Annotated[str, typer.Argument(help="NAME or NAME@VERSION (latest without a version).")]


@app.command("list")
def list_command(
    name: Annotated[str | None, typer.Argument(help="Only this model's versions.")] = None,
    models_dir: ModelsDir = None,
) -> None:
    """Every registered version: kind, creation time, metrics and checksums."""
    from twinsched.scheduling.ai.model_store import ModelRegistry, format_metrics

    registry = ModelRegistry(models_dir)
    with expected_errors():
        cards = registry.list(registry.get(name).name if name else None)
    table = Table("name", "version", "kind", "created", "metrics", "data", "artifact")
    for c in cards:
        table.add_row(
            c.name, str(c.version), c.kind, c.created, format_metrics(c.metrics) or "-",
            c.data_checksum[:12], c.artifact_sha256[:12],
        )  # fmt: skip
    make_console().print(table if cards else f"no models in {registry.root}")


@app.command("show")
def show_command(ref: Ref, models_dir: ModelsDir = None) -> None:
    """One version's card: provenance, training spec, metrics, files and framework versions."""
    from twinsched.scheduling.ai.model_store import ModelRegistry, parse_ref

    with expected_errors():
        card = ModelRegistry(models_dir).get(*parse_ref(ref))
    table = Table("field", "value", show_header=False)
    for key, value in _card_rows(card) + _learned_rows(card, models_dir):
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
    models_dir: ModelsDir = None,
) -> None:
    """Remove one version (NAME@VERSION) or a model with all its versions (NAME)."""
    from twinsched.scheduling.ai.model_store import ModelRegistry, parse_ref

    registry = ModelRegistry(models_dir)
    with expected_errors():
        name, number = parse_ref(ref)
        what = registry.get(name, number).ref if number is not None else f"all of {name}"
        count = 1 if number is not None else len(registry.versions(name))
    if not yes:
        typer.confirm(f"delete {what} ({count} version(s))?", abort=True)
    with expected_errors():
        gone = registry.delete(name, number)
    make_console().print(f"deleted {', '.join(c.ref for c in gone)}")


@app.command("verify")
def verify_command(
    ref: Annotated[str | None, typer.Argument(help="NAME[@VERSION]; all when omitted.")] = None,
    models_dir: ModelsDir = None,
) -> None:
    """Check artifact files against their cards' SHA-256; exit status 1 if any differ."""
    from twinsched.scheduling.ai.model_store import ModelRegistry, parse_ref

    registry = ModelRegistry(models_dir)
    with expected_errors():
        if ref is None:
            cards = registry.list()
        else:
            name, number = parse_ref(ref)
            latest = registry.get(name, number)  # an unknown name fails listing known ones
            cards = [latest] if number is not None else registry.list(name)
        results = [(card, registry.check(card)) for card in cards]
    table = Table("model", "status")
    for card, problems in results:
        table.add_row(card.ref, "ok" if not problems else "[red]" + "; ".join(problems))
    make_console().print(table if results else f"no models in {registry.root}")
    if any(problems for _, problems in results):
        raise typer.Exit(1)


def _card_rows(card: ModelCard) -> list[tuple[str, str]]:
    from twinsched.scheduling.ai.model_store import format_value

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
