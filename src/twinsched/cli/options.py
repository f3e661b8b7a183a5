"""Option parsing shared by the commands: seed lists and ranges, comma lists, option types.

Light on purpose (typer and the standard library only): every command module imports it at
start-up, ``twinsched --help`` included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

TraceOpt = Annotated[str, typer.Option(help="trace name (see `twinsched traces`)")]
VariantOpt = Annotated[str, typer.Option(help="trace variant: default, gpushare40, ...")]
SeedsOpt = Annotated[str, typer.Option(help="comma-separated seeds or ranges, e.g. 0-9")]
DataOpt = Annotated[
    Path | None, typer.Option(help="data folder (default $TWINSCHED_DATA, else ../shared/data)")
]


def split_list(text: str) -> list[str]:
    """The non-empty items of a comma-separated option, stripped: ``"a, b,"`` is ``[a, b]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``--seeds``: comma-separated integers and ranges like ``0-9``."""
    seeds: list[int] = []
    for part in split_list(text):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise typer.BadParameter(f"seeds are integers or ranges like 0-9, got {part!r}")
        seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return seeds
