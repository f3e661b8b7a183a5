"""A single self-contained HTML report: inline CSS, figures embedded as data URIs.

The page depends only on the runs and the images given, never on the wall clock, so the
same runs give the same bytes. Every piece of text is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from twinsched.model.run import RunResult
from twinsched.report.aggregate import by_scheduler, comparison_rows, run_mode
from twinsched.report.records import fingerprint
from twinsched.report.table import columns, format_cell, zero_note

_MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1f24;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.spec { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.spec dt { font-weight: 600; }
dl.spec dd { margin: 0; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
figcaption, footer, p.note { color: #57606a; font-size: 0.85em; }
footer { margin-top: 2.5em; border-top: 1px solid #d0d7de; padding-top: 0.6em; }
"""


def write_html(
    runs: list[RunResult],
    out_dir: str | Path,
    title: str,
    images: list[str],
    *,
    reference: dict[str, float] | None = None,
) -> Path:
    """Write ``out_dir/report.html`` and return its path.

    ``images`` are image files to embed (PNG, SVG or JPEG); a relative path that does not
    exist from the working directory is looked up under ``out_dir``. ``reference`` is
    passed to :func:`~twinsched.report.aggregate.comparison_rows`.
    """
    if not runs:
        raise ValueError("no runs to report")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = comparison_rows(runs, reference=reference)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        "<h2>Run spec</h2>",
        _spec(runs),
        "<h2>Comparison</h2>",
        _comparison(rows),
        *(["<h2>Figures</h2>"] if images else []),
        *(_figure(_locate(image, out)) for image in images),
        "<h2>Runs</h2>",
        _per_run(runs),
        f"<footer>{_e(_generated_line(runs))}</footer>",
        "</body></html>",
    ]
    path = out / "report.html"
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return path


def _spec(runs: list[RunResult]) -> str:
    items = [
        ("trace", ", ".join(sorted({r.trace for r in runs}))),
        ("mode", ", ".join(sorted({r.mode for r in runs}))),
        ("seeds", ", ".join(str(s) for s in sorted({r.seed for r in runs}))),
        ("schedulers", ", ".join(by_scheduler(runs))),
        ("runs", str(len(runs))),
    ]
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items)
    return f'<dl class="spec">{body}</dl>'


def _comparison(rows: list[dict[str, Any]]) -> str:
    cols = columns(rows)
    head = "".join(_cell(c.header, c.numeric, "th") for c in cols)
    body = (
        "<tr>" + "".join(_cell(format_cell(row, c), c.numeric) for c in cols) + "</tr>"
        for row in rows
    )
    return _table(head, body) + _note(zero_note(rows))


def _per_run(runs: list[RunResult]) -> str:
    """One row per run: scheduler, seed, wall time, its summary's numbers (human names, zero
    columns left out as in the comparison) and the unscheduled pods by reason."""
    ordered = [run for group in by_scheduler(runs).values() for run in group]
    rows = [
        {"scheduler": run.scheduler, "seed": run.seed, "wall_seconds": run.wall_seconds}
        | {f: run.summary[f] for f in _scalar_summary_fields([run])}
        for run in ordered
    ]
    cols = columns(rows)
    head = "".join(_cell(c.header, c.numeric, "th") for c in cols)
    head += _cell("unscheduled by reason", False, "th")
    body = []
    for row, run in zip(rows, ordered, strict=True):
        cells = [_cell(format_cell(row, c), c.numeric) for c in cols]
        cells.append(_cell(_reasons(run.summary.get("unscheduled_by_reason"))))
        body.append("<tr>" + "".join(cells) + "</tr>")
    return _table(head, body) + _note(zero_note(rows))


def _scalar_summary_fields(runs: list[RunResult]) -> list[str]:
    """Numeric summary fields of any run, in first-seen order."""
    fields: list[str] = []
    for run in runs:
        for key, value in run.summary.items():
            if key not in fields and isinstance(value, int | float) and not isinstance(value, bool):
                fields.append(key)
    return fields


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>' if text else ""


def _reasons(value: object) -> str:
    if not isinstance(value, dict) or not value:
        return "—"
    return ", ".join(f"{reason}: {count}" for reason, count in value.items())


def _generated_line(runs: list[RunResult]) -> str:
    traces = ", ".join(sorted({r.trace for r in runs}))
    seeds = ", ".join(str(s) for s in sorted({r.seed for r in runs}))
    wall = sum(r.wall_seconds for r in runs)
    return (
        f"Generated by twinsched from {len(runs)} {run_mode(runs)} runs of {traces} "
        f"(seeds {seeds}; {len(by_scheduler(runs))} schedulers; {wall:.2f} s of run time); "
        f"data fingerprint sha256:{fingerprint(runs)}."
    )


def _locate(image: str, out_dir: Path) -> Path:
    path = Path(image)
    if not path.is_absolute() and not path.exists():
        path = out_dir / path
    if not path.is_file():
        raise FileNotFoundError(f"image to embed not found: {image}")
    return path


def _figure(path: Path) -> str:
    mime = _MIME.get(path.suffix.lower())
    if mime is None:
        raise ValueError(f"cannot embed {path.name}: use one of {', '.join(sorted(_MIME))}")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<figure><img src="data:{mime};base64,{data}" alt="{_e(path.stem)}">'
        f"<figcaption>{_e(path.name)}</figcaption></figure>"
    )


def _table(head: str, body: Iterable[str]) -> str:
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(text: str, numeric: bool = False, tag: str = "td") -> str:
    cls = ' class="num"' if numeric else ""
    return f"<{tag}{cls}>{_e(text)}</{tag}>"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
