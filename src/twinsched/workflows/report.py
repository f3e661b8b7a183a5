"""A self-contained HTML page of a workflow comparison: tables and embedded Gantt charts."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}"
    "img{max-width:100%}"
)


def html_table(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return "<p>(no rows)</p>"
    keys = list(rows[0])
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in keys) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def write_html(
    path: Path,
    title: str,
    tables: Sequence[tuple[str, Sequence[dict[str, Any]]]],
    images: Sequence[Path],
) -> Path:
    """One page: each (caption, rows) table, then every PNG embedded as a data URI."""
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for caption, rows in tables:
        parts += [f"<h2>{html.escape(caption)}</h2>", html_table(rows)]
    if images:
        parts.append("<h2>Gantt charts (best schedule of each instance)</h2>")
    for image in images:
        data = base64.b64encode(image.read_bytes()).decode("ascii")
        parts.append(f'<h3>{html.escape(image.stem)}</h3><img src="data:image/png;base64,{data}">')
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>\n"
    )
    path.write_text(page)
    return path
