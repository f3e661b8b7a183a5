"""Importers by name: each reads files in place and returns whole scenarios, or raises.

An importer parses everything before the store is touched, and the store writes all its
scenarios in one transaction, so a bad row anywhere leaves the store unchanged. Bad rows raise
:class:`twinsched.errors.TraceFormatError` naming file, line and field.

An importer is ``(path, name, options) -> list[Scenario]``; most return one scenario called
``name``, ``alibaba-gpu-2023`` with several variants returns ``name/variant`` for each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from twinsched.errors import TraceFormatError, UnknownNameError
from twinsched.model.cluster import Scenario
from twinsched.registry import Registry, load

ImportFunction = Callable[[Path, str, Mapping[str, str]], list[Scenario]]


@dataclass(frozen=True)
class Importer:
    name: str
    function: ImportFunction
    help: str
    options: Mapping[str, str]  # option -> what it means


_M = "twinsched.store.importers."
# name -> (the import function, its help, its options or None); imported on first use
_BUILT_INS: dict[str, tuple[str, str, str | None]] = {
    "alibaba-gpu-2023": (
        _M + "alibaba_gpu_2023:import_alibaba",
        "Alibaba GPU trace 2023 (openb): node list + pod-list variants",
        _M + "alibaba_gpu_2023:OPTIONS",
    ),
    "alibaba-gpu-2025-dlrm": (
        _M + "alibaba_dlrm_2025:import_dlrm",
        "Alibaba DLRM serving trace 2025 (instances, anti-affinity)",
        _M + "alibaba_dlrm_2025:OPTIONS",
    ),
    "swf": (
        _M + "swf:import_swf",
        "Standard Workload Format HPC log (Parallel Workloads Archive)",
        _M + "swf:OPTIONS",
    ),
    "supercloud": (
        _M + "supercloud:import_supercloud",
        "MIT SuperCloud Slurm job table (slurm-log*.csv[.gz])",
        None,
    ),
    "decice": (
        _M + "decice:import_decice",
        "a DECICE document: D2.2 output, NodePool objects, training rows, digital twin JSON",
        _M + "decice:OPTIONS",
    ),
    "twin-json": (
        _M + "twin_json:import_twin_json",
        "a twin JSON document (twinsched/twin-v1)",
        None,
    ),
    "twin-csv": (
        _M + "twin_csv:import_twin_csv",
        "a folder written by 'export --format csv'",
        None,
    ),
    "synthetic": (
        _M + "synthetic:import_synthetic",
        "the synthetic continuum generator (PATH: continuum|cluster|FILE.json)",
        _M + "synthetic:OPTIONS",
    ),
}
IMPORTERS: Registry[ImportFunction] = Registry(
    "importer", {n: (fn, about) for n, (fn, about, _) in _BUILT_INS.items()}, "twinsched.importers"
)
_OPTIONS: dict[str, Mapping[str, str]] = {}  # options of importers registered in code


def register(
    name: str, help: str, options: Mapping[str, str] | None = None
) -> Callable[[ImportFunction], ImportFunction]:
    """Decorator: add an importer under ``name``; a second one with the same name is refused."""

    def add(function: ImportFunction) -> ImportFunction:
        IMPORTERS.register(name, function, help)
        _OPTIONS[name] = dict(options or {})
        return function

    return add


def _options(name: str) -> Mapping[str, str]:
    if name in _OPTIONS:
        return _OPTIONS[name]
    target = _BUILT_INS[name][2] if name in _BUILT_INS else None
    return dict(load(target)) if target else {}


def get_importer(name: str) -> Importer:
    """One importer, imported on first use; unknown names list the known ones."""
    return Importer(name, IMPORTERS.get(name), IMPORTERS.describe()[name], _options(name))


def importers() -> dict[str, Importer]:
    """Every importer: the built-ins plus the ``twinsched.importers`` entry points."""
    return {name: get_importer(name) for name in sorted(IMPORTERS.names())}


def option(options: Mapping[str, str], key: str, default: str, known: Mapping[str, str]) -> str:
    """One option's value; an unknown option key fails listing the known ones."""
    for given in options:
        if given not in known:
            raise UnknownNameError("importer option", given, list(known))
    return options.get(key, default)


def whole_option(
    options: Mapping[str, str], key: str, path: Path, low: int, high: int
) -> int | None:
    """An integer option in ``[low, high]`` (None when not given), or a clear error."""
    if key not in options:
        return None
    text = options[key]
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        problem = f"expected an integer in [{low}, {high}], got {text!r}"
        raise TraceFormatError(str(path), 0, f"option {key}", problem)
    return value
