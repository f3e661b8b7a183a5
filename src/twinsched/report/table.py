"""Comparison rows as a Rich terminal table, Markdown (for the README) or plain cells.

Rows come from :func:`twinsched.report.aggregate.comparison_rows`. A ``<key>_mean`` with a
matching ``<key>_std`` shows as one ``mean ± std`` column. Headers are the human names with
units of :mod:`twinsched.metrics.names` (one mapping for every table and page); counts show
as integers, other numbers with the metric's decimals, right-aligned; missing values show as
an em dash. A numeric column that is zero in every row is not shown: :func:`zero_note` names
it under the table instead (a replay's allocation at the end is 0 once every pod has left).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeGuard

from twinsched.metrics.names import MetricName, summary_name

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

MISSING = "—"
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#+!|])")  # no link or emphasis; ( ) stay


@dataclass(frozen=True)
class Column:
    """One displayed column: the row key, its name, and the key of its spread if any."""

    key: str
    name: MetricName
    numeric: bool
    std_key: str | None = None

    @property
    def header(self) -> str:
        """The column's header, unit included."""
        return self.name.header


def columns(rows: list[dict[str, Any]]) -> list[Column]:
    """The columns to show, in row order; ``_std`` keys fold into their ``_mean`` column;
    a column without any value, or numeric and zero in every row, is left out."""
    return [c for c in _all_columns(rows) if not _all_zero(rows, c)]


def zero_note(rows: list[dict[str, Any]]) -> str:
    """A line naming the numeric columns left out for being zero in every row; ``""`` if none."""
    zero = [c.header for c in _all_columns(rows) if _all_zero(rows, c)]
    return f"0 in every row: {', '.join(zero)}" if zero else ""


def format_cell(row: dict[str, Any], column: Column) -> str:
    """One cell as text in the metric's format, ``mean ± std`` where a spread exists."""
    value = row.get(column.key)
    if value is None:
        return MISSING
    text = _format_value(value, column.name)
    if column.std_key is not None and row.get(column.std_key) is not None:
        text += f" ± {_format_value(row[column.std_key], column.name)}"
    return text


def _all_columns(rows: list[dict[str, Any]]) -> list[Column]:
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
        out.append(Column(key, _column_name(rows, key), numeric, std_key))
    return out


def _column_name(rows: list[dict[str, Any]], key: str) -> MetricName:
    """The key's name; a count whose mean over seeds is not whole in some row shows one
    decimal in every row, so the column reads alike."""
    name = summary_name(key)
    values = [row.get(key) for row in rows]
    if name.count and any(_is_number(v) and not float(v).is_integer() for v in values):
        return replace(name, count=False, decimals=1)
    return name


def _all_zero(rows: list[dict[str, Any]], column: Column) -> bool:
    keys = [column.key] + ([column.std_key] if column.std_key else [])
    values = [row.get(key) for row in rows for key in keys]
    return column.numeric and all(v is None or (_is_number(v) and v == 0) for v in values)


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
    # a header wraps at spaces, down to its longest word
    least = [
        max([w, *(len(word) for word in c.header.split())])
        for c, w in zip(cols, widest, strict=True)
    ]
    fits = width is None or sum(least) + 3 * len(cols) <= width
    note = zero_note(rows)
    table = Table(
        title=Text(title),
        caption=Text(note) if note else None,
        header_style="bold",
        box=box.SIMPLE_HEAD,
    )
    for col, w, low in zip(cols, widest, least, strict=True):
        table.add_column(
            Text(col.header),
            justify="right" if col.numeric else "left",
            min_width=low if fits else None,
            # Rich narrows the widest wrapping column first: one that needs no wrapping
            # (its header no wider than its cells) must not stop it
            no_wrap=fits and len(col.header) <= w,
            overflow="ellipsis" if fits else "fold",  # fold: a cramped value wraps, not cut
        )
    for line in cells:
        table.add_row(*(Text(cell, no_wrap=fits, overflow=None) for cell in line))
    return table


def print_comparison(console: Console, rows: list[dict[str, Any]], title: str) -> None:
    """Print the comparison table to a Rich console, fitted to its width."""
    console.print(comparison_table(rows, title, width=console.width))


def rows_to_markdown(rows: list[dict[str, Any]]) -> str:
    """A GitHub-flavoured Markdown table of the rows, numbers right-aligned, then the
    :func:`zero_note` as a paragraph if any; ends in a newline."""
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
    note = zero_note(rows)
    if note:
        lines += ["", _escape_markdown(note)]
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


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _format_value(value: object, name: MetricName) -> str:
    if not _is_number(value) or (isinstance(value, int) and not name.count):
        return str(value)
    return name.format(value)


def _escape_markdown(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)
