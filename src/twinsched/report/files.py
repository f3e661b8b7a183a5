"""Write everything a comparison produces into one folder.

Layout of ``out_dir``::

    results.json                      {"runs": [record, ...]}, see records.ordered_record
    comparison.md                     the comparison table in Markdown (for READMEs)
    curves/<scheduler>_seed<seed>.csv fill-up curve points, or replay samples
    fillup.png, fragmentation.png     fill-up runs
    replay.png                        replay runs with samples
    tiers.png, energy.png,            replay runs with faults or energy: per-tier time lines
    disruptions.png                   (energy.png with energy accounting only)
    report.html                       self-contained report embedding the PNGs
"""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path
from typing import Any

from twinsched.model.run import RunResult
from twinsched.report.aggregate import comparison_rows, run_mode
from twinsched.report.dynamics_plots import has_tiers, plot_disruptions, plot_energy, plot_tiers
from twinsched.report.html import write_html
from twinsched.report.plots import FRAG_AMOUNT, plot_fillup, plot_fragmentation, plot_replay
from twinsched.report.records import results_json
from twinsched.report.table import rows_to_markdown

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 80


def write_outputs(
    runs: list[RunResult],
    out_dir: str | Path,
    title: str,
    reference: dict[str, float] | None = None,
) -> dict[str, Path]:
    """Write results, CSVs, plots and the HTML report; return the paths written.

    Keys: ``results``, ``markdown``, ``html``, ``fillup_png``, ``fragmentation_png`` or
    ``replay_png`` (with ``tiers_png``, ``energy_png``, ``disruptions_png`` for runs with faults
    or energy; the plots that apply to the mode), and ``curves/<file>.csv`` per run.
    Raises ValueError for no runs or runs of mixed modes.
    """
    if not runs:
        raise ValueError("no runs to write")
    mode = run_mode(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {"results": out / "results.json"}
    paths["results"].write_text(results_json(runs), encoding="utf-8")
    paths["markdown"] = out / "comparison.md"
    markdown = rows_to_markdown(comparison_rows(runs, reference=reference))
    paths["markdown"].write_text(markdown, encoding="utf-8")
    for run in runs:
        csv_path = out / "curves" / f"{safe_name(run.scheduler)}_seed{run.seed}.csv"
        write_csv(csv_path, run.samples if mode == "replay" else run.curve)
        paths[f"curves/{csv_path.name}"] = csv_path
    images = _write_plots(runs, mode, out)
    paths.update(images)
    paths["html"] = write_html(
        runs, out, title, [str(p) for p in images.values()], reference=reference
    )
    return paths


def safe_name(name: str) -> str:
    """A file-name stem for a scheduler name; changed names get a short hash so none collide.

    ``"fgd"`` stays ``"fgd"``; ``"fgd+labels@2"`` becomes ``"fgd-labels-2-<6 hex>"``.
    """
    stem = _UNSAFE.sub("-", name).strip(".-")[:_MAX_STEM]
    if stem == name and stem:
        return stem
    digest = hashlib.sha256(name.encode()).hexdigest()[:6]
    return f"{stem}-{digest}" if stem else digest


def _write_plots(runs: list[RunResult], mode: str, out: Path) -> dict[str, Path]:
    if mode == "replay":
        if not any(run.samples for run in runs):
            return {}
        images = {"replay_png": plot_replay(runs, out / "replay.png")}
        if has_tiers(runs):  # runs with faults or energy: per-tier time lines
            images["tiers_png"] = plot_tiers(runs, out / "tiers.png")
            if any("energy_kwh" in p for run in runs for p in run.samples[:1]):
                images["energy_png"] = plot_energy(runs, out / "energy.png")
            images["disruptions_png"] = plot_disruptions(runs, out / "disruptions.png")
        return images
    if not any(run.curve for run in runs):
        return {}
    images = {"fillup_png": plot_fillup(runs, out / "fillup.png")}
    if any(FRAG_AMOUNT in p for run in runs for p in run.curve):
        images["fragmentation_png"] = plot_fragmentation(runs, out / "fragmentation.png")
    return images


def write_csv(path: Path, points: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields: list[str] = []
    for point in points:
        fields += [k for k in point if k not in fields]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        if fields:
            writer.writeheader()
        writer.writerows(points)
