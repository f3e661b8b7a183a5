"""Training curves as a picture: losses per epoch and validation allocation per round."""

from __future__ import annotations

from pathlib import Path


def plot_curves(curves: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [row["step"] for row in curves]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for key, label in (("train_loss", "training loss"), ("val_loss", "validation loss")):
        left.plot(steps, [row.get(key, float("nan")) for row in curves], marker=".", label=label)
    left.set_xlabel("epoch (all rounds)")
    left.set_ylabel("listwise cross-entropy")
    left.legend()
    marks = [(row["step"], row["val_alloc_pct"]) for row in curves if "val_alloc_pct" in row]
    if marks:
        right.plot(*zip(*marks, strict=True), marker="o", color="tab:green")
    right.set_xlabel("epoch (all rounds)")
    right.set_ylabel("validation GPU allocation at 100 % arrived (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
