"""Comparison rows as a Rich terminal table, Markdown (for the README) or plain cells.

Rows come from :func:`twinsched.report.aggregate.comparison_rows`. A ``<key>_mean`` with a
matching ``<key>_std`` shows as one ``mean ± std`` column; numbers have two decimals and are
right-aligned; missing values show as an em dash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

MISSING = "—"
_HEADERS = {
    "scheduler": "scheduler",
    "seeds": "seeds",
    "final_frag_amount_pct": "frag amount %",
    "unscheduled": "unscheduled",
    "wall_seconds": "wall s",
    "published": "paper @100%",
    "delta": "Δ paper",
    "gpu_alloc_ratio_pct": "alloc % end",
    "gpu_alloc_time_mean_pct": "alloc % mean",
    "queue_wait_mean_s": "wait mean s",
    "queue_wait_p95_s": "wait p95 s",
    "completion_mean_s": "completion s",
    "energy_kwh": "energy kWh",
    "carbon_g": "CO2 g",
    "started": "started",
}
_ALLOC = re.compile(r"^alloc_(?P<at>[0-9.]+)$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|])")


@dataclass(frozen=True)
class Column:
    """One displayed column: the row key, its header, and the key of its spread if any."""

    key: str
    header: str
    numeric: bool
    std_key: str | None = None


def columns(rows: list[dict[str, Any]]) -> list[Column]:
    """The columns to show, in row order; ``_std`` keys fold into their ``_mean`` column."""
    keys = _key_order(rows)
    out: list[Column] = []
    for key in keys:
        if key.endswith("_std") and key[: -len("_std")] + "_mean" in keys:
            continue
        if all(row.get(key) is None for row in rows):
            continue
        base = key[: -len("_mean")] if key.endswith("_mean") else key
        std_key = base + "_std" if key.endswith("_mean") and base + "_std" in keys else None
        numeric = any(_is_number(row.get(key)) for row in rows)
        out.append(Column(key, _header(base), numeric, std_key))
    return out


def format_cell(row: dict[str, Any], column: Column) -> str:
    """One cell as text: two decimals for floats, ``mean ± std`` where a spread exists."""
    value = row.get(column.key)
    if value is None:
        return MISSING
    text = _format_value(value)
    if column.std_key is not None and row.get(column.std_key) is not None:
        text += f" ± {_format_value(row[column.std_key])}"
    return text


def comparison_table(rows: list[dict[str, Any]], title: str, *, width: int | None = None) -> Table:
    """A Rich table of comparison rows; text cells are literal (no Rich markup).

    Cells do not wrap (headers wrap instead) unless the table would not fit in ``width``
    characters: then cells wrap too, rather than columns being cropped off the screen.
    """
    from rich import box
    from rich.table import Table
    from rich.text import Text

    cols = columns(rows)
    cells = [[format_cell(row, col) for col in cols] for row in rows]
    widest = [max((len(line[i]) for line in cells), default=0) for i in range(len(cols))]
    fits = width is None or sum(widest) + 3 * len(cols) <= width
    table = Table(title=Text(title), header_style="bold", box=box.SIMPLE_HEAD)
    for col, w in zip(cols, widest, strict=True):
        table.add_column(
            Text(col.header),
            justify="right" if col.numeric else "left",
            min_width=w if fits else None,
            overflow="ellipsis" if fits else "fold",  # fold: a cramped value wraps, not cut
        )
    for line in cells:
        table.add_row(*(Text(cell, no_wrap=fits, overflow=None) for cell in line))
    return table


def print_comparison(console: Console, rows: list[dict[str, Any]], title: str) -> None:
    """Print the comparison table to a Rich console, fitted to its width."""
    console.print(comparison_table(rows, title, width=console.width))


def rows_to_markdown(rows: list[dict[str, Any]]) -> str:
    """A GitHub-flavoured Markdown table of the rows, numbers right-aligned; ends in a newline."""
    cols = columns(rows)
    if not cols:
        return ""
    lines = [
        "| " + " | ".join(_escape_markdown(c.header) for c in cols) + " |",
        "|" + "|".join("---:" if c.numeric else "---" for c in cols) + "|",
    ]
    for row in rows:
        cells = (_escape_markdown(format_cell(row, c)) for c in cols)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _key_order(rows: list[dict[str, Any]]) -> list[str]:
    """All keys of all rows; a key first seen in a later row goes after its predecessor there."""
    order: list[str] = []
    for row in rows:
        previous: str | None = None
        for key in row:
            if key not in order:
                order.insert(order.index(previous) + 1 if previous is not None else 0, key)
            previous = key
    return order


def _header(base: str) -> str:
    match = _ALLOC.match(base)
    if match:
        return f"alloc % @{match['at']}%"
    return _HEADERS.get(base, base.replace("_", " "))


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _format_value(value: object) -> str:
    if not _is_number(value) or isinstance(value, int):
        return str(value)
    return f"{value:.2f}"


def _escape_markdown(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
