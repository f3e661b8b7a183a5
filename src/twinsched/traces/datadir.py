"""Where the public traces live: ``--data DIR``, ``$TWINSCHED_DATA`` or ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path

from twinsched.errors import DataNotFoundError

ENV_VAR = "TWINSCHED_DATA"
DEFAULT = Path("../shared/data")

HOW_TO_GET = {
    "alibaba_gpu_v2023": (
        "download the CSV files of https://github.com/alibaba/clusterdata/tree/master/"
        "cluster-trace-gpu-v2023/csv into DATA/alibaba_gpu_v2023/csv/"
    ),
}


def data_root(explicit: str | Path | None = None) -> Path:
    """The data folder: the explicit argument, the environment variable, or the default."""
    if explicit:
        return Path(explicit)
    return Path(os.environ.get(ENV_VAR) or DEFAULT)


def trace_dir(dataset: str, explicit: str | Path | None = None) -> Path:
    """The folder of one dataset, with a clear error saying how to get it when it is missing."""
    root = data_root(explicit)
    folder = root / dataset
    if not folder.is_dir():
        how = HOW_TO_GET.get(dataset, "see the project README, section 'Data'")
        raise DataNotFoundError(
            f"trace folder not found: {folder.resolve()} (data root {root}, "
            f"set with --data DIR or ${ENV_VAR}). To get it: {how}."
        )
    return folder
