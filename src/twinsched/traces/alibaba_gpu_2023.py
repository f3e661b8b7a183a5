"""Reader for the Alibaba GPU cluster trace of 2023 ("openb", the FGD paper's trace).

Files: ``openb_node_list_{gpu_node,all_node}.csv`` and ``openb_pod_list_<variant>.csv``.
Times are read for replay mode; the fill-up protocol ignores them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.model.cluster import (
    MILLI_PER_GPU,
    Nodes,
    Pods,
    Scenario,
    nodes_from_columns,
    pods_from_columns,
    single_pool_scenario,
)
from twinsched.model.ranges import MAX_CPU_MILLI, MAX_GPUS, MAX_MEMORY_MIB, MAX_TIME_S
from twinsched.traces import openb_blend
from twinsched.traces.checked import checked
from twinsched.traces.datadir import trace_dir

DATASET = "alibaba_gpu_v2023"
TRACE = "alibaba-gpu-2023"
VARIANTS = (
    "default",
    "cpu0", "cpu037", "cpu050", "cpu072", "cpu100", "cpu200", "cpu235", "cpu250", "cpu300",
    "gpushare20", "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
    "gpuspec05", "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
)  # fmt: skip
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
# Bump when what the reader makes of the same files changes: parsed traces cached under an
# older version are then read again (traces/cache.py).
PARSER_VERSION = 1


def csv_dir(data: str | Path | None = None) -> Path:
    return trace_dir(DATASET, data) / "csv"


def read_nodes(path: Path) -> Nodes:
    """A node list; ``model`` must be set exactly when the node has GPUs."""
    from twinsched.traces.csvcheck import int_column, read_table, unique_names  # pandas: lazy

    frame = read_table(path, NODE_COLUMNS)
    names = unique_names(frame, path, "sn")
    gpus = int_column(frame, path, "gpu", maximum=MAX_GPUS)
    models = frame["model"].str.strip().tolist()
    for row, (count, model) in enumerate(zip(gpus.tolist(), models, strict=True)):
        if count > 0 and not model:
            raise TraceFormatError(str(path), row + 2, "model", "GPU node without a GPU model")
    return nodes_from_columns(
        names,
        int_column(frame, path, "cpu_milli", minimum=1, maximum=MAX_CPU_MILLI),
        int_column(frame, path, "memory_mib", maximum=MAX_MEMORY_MIB),
        gpus,
        [m if c > 0 else "" for c, m in zip(gpus.tolist(), models, strict=True)],
    )


def read_pods(path: Path, gpu_models: tuple[str, ...]) -> Pods:
    """A pod list; ``gpu_spec`` (``A|B``, empty = any) becomes a bitset over ``gpu_models``."""
    from twinsched.traces.csvcheck import int_column, read_table, unique_names  # pandas: lazy

    frame = read_table(path, POD_COLUMNS)
    names = unique_names(frame, path, "name")
    count = int_column(frame, path, "num_gpu", maximum=MAX_GPUS)
    milli = int_column(frame, path, "gpu_milli", maximum=MILLI_PER_GPU)
    bad = np.flatnonzero((count > 0) & (milli == 0))
    if bad.size:
        raise TraceFormatError(str(path), int(bad[0]) + 2, "gpu_milli", "GPU pod asks for 0 milli")
    index = {m: i for i, m in enumerate(gpu_models)}
    specs = frame["gpu_spec"].tolist() if "gpu_spec" in frame.columns else [""] * len(frame)
    mask = np.zeros(len(frame), dtype=np.uint64)
    for row, spec in enumerate(specs):
        bits = 0
        for model in filter(None, (s.strip() for s in spec.split("|"))):
            if model not in index:
                problem = f"GPU model {model!r} is not in the node list {list(gpu_models)}"
                raise TraceFormatError(str(path), row + 2, "gpu_spec", problem)
            bits |= 1 << index[model]
        mask[row] = bits
    created = int_column(frame, path, "creation_time", default=0, maximum=MAX_TIME_S)
    deleted = int_column(frame, path, "deletion_time", default=-1, minimum=-1, maximum=MAX_TIME_S)
    early = np.flatnonzero((deleted >= 0) & (deleted < created))
    if early.size:
        raise TraceFormatError(
            str(path), int(early[0]) + 2, "deletion_time", "before creation_time"
        )
    duration = np.where(deleted >= 0, deleted - created, np.inf).astype(np.float64)
    return pods_from_columns(
        names,
        int_column(frame, path, "cpu_milli", maximum=MAX_CPU_MILLI),
        int_column(frame, path, "memory_mib", maximum=MAX_MEMORY_MIB),
        count,
        milli,
        model_mask=mask,
        arrival_s=created.astype(np.float64),
        duration_s=duration,
    )


def blend_parts(variant: str) -> tuple[str, str, int] | None:
    """A blend's two variants and percent (``traces/openb_blend.py``), None for a plain
    variant; :class:`UnknownNameError` for a name that is neither."""
    if variant in VARIANTS:
        return None
    parts = openb_blend.parse(variant)
    if parts is None:
        raise UnknownNameError(f"{TRACE} variant", variant, [*VARIANTS, openb_blend.FORM])
    for part in parts[:2]:
        if part not in VARIANTS:
            raise UnknownNameError(f"{TRACE} variant in '{variant}'", part, list(VARIANTS))
    return parts


def source_files(
    variant: str = "default", data: str | Path | None = None, *, gpu_nodes_only: bool = True
) -> tuple[Path, ...]:
    """The node list and the pod list(s) that :func:`load` reads (a blend reads two)."""
    parts = blend_parts(variant)
    pod_variants = (variant,) if parts is None else parts[:2]
    folder = csv_dir(data)
    node_file = "openb_node_list_gpu_node.csv" if gpu_nodes_only else "openb_node_list_all_node.csv"
    return folder / node_file, *(folder / f"openb_pod_list_{v}.csv" for v in pod_variants)


def load(
    variant: str = "default", data: str | Path | None = None, *, gpu_nodes_only: bool = True
) -> Scenario:
    """The study's cluster (GPU nodes only, by default) and one pod-list variant or blend."""
    node_path, *pod_paths = source_files(variant, data, gpu_nodes_only=gpu_nodes_only)
    folder = node_path.parent
    nodes = read_nodes(node_path)
    pod_lists = [read_pods(path, nodes.gpu_models) for path in pod_paths]
    parts = blend_parts(variant)
    if parts is None:
        pods = pod_lists[0]
    else:
        first, second, percent = parts
        pods = openb_blend.blend(variant, (first, pod_lists[0]), (second, pod_lists[1]), percent)
    meta: dict[str, object] = {"trace": TRACE, "variant": variant, "source": str(folder)}
    return checked(single_pool_scenario(f"{TRACE}/{variant}", nodes, pods, meta), folder)


# The FGD paper's published GPU allocation % on ``default`` (mean of 10 seeds), by arrived %.
PUBLISHED_DEFAULT: dict[str, dict[float, float]] = {
    "fgd": {90.0: 89.98, 100.0: 95.23, 130.0: 95.39},
    "bestfit": {90.0: 89.99, 100.0: 92.86, 130.0: 93.08},
    "gpupacking": {90.0: 89.98, 100.0: 91.78, 130.0: 92.00},
    "gpuclustering": {90.0: 89.98, 100.0: 91.65, 130.0: 91.88},
    "dotprod": {90.0: 89.98, 100.0: 90.62, 130.0: 90.85},
    "random": {90.0: 85.02, 100.0: 86.30, 130.0: 87.47},
}
