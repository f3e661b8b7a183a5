"""``alibaba-gpu-2023``: the openb node list plus any or all of its pod-list variants.

PATH is the dataset folder (``alibaba_gpu_v2023``) or its ``csv`` folder. With one variant the
scenario is NAME; with several (``variants=all`` or a comma list) each is ``NAME/variant``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.model.cluster import Scenario, single_pool_scenario
from twinsched.store.importers import option
from twinsched.traces.alibaba_gpu_2023 import TRACE, VARIANTS, read_nodes, read_pods
from twinsched.traces.checked import checked

OPTIONS = {
    "variants": "a pod-list variant, a comma list, or 'all' (default: default)",
    "nodes": "'gpu' (the study's GPU nodes, default) or 'all' (every node)",
}


def import_alibaba(path: Path, name: str, options: Mapping[str, str]) -> list[Scenario]:
    folder = path / "csv" if (path / "csv").is_dir() else path
    if not folder.is_dir():
        raise TraceFormatError(str(path), 0, "-", "not a folder with openb_*.csv files")
    variants = _variants(option(options, "variants", "default", OPTIONS))
    which = option(options, "nodes", "gpu", OPTIONS)
    if which not in ("gpu", "all"):
        raise UnknownNameError("node list", which, ["gpu", "all"])
    node_file = folder / f"openb_node_list_{'gpu_node' if which == 'gpu' else 'all_node'}.csv"
    nodes = read_nodes(node_file)
    out = []
    for variant in variants:
        pod_file = folder / f"openb_pod_list_{variant}.csv"
        scenario = single_pool_scenario(
            name if len(variants) == 1 else f"{name}/{variant}",
            nodes,
            read_pods(pod_file, nodes.gpu_models),
            {"trace": TRACE, "variant": variant, "nodes": which},
        )
        out.append(checked(scenario, pod_file))
    return out


def _variants(spec: str) -> list[str]:
    if spec == "all":
        return list(VARIANTS)
    chosen = [v.strip() for v in spec.split(",") if v.strip()]
    for v in chosen:
        if v not in VARIANTS:
            raise UnknownNameError(f"{TRACE} variant", v, list(VARIANTS))
    return chosen or ["default"]
