"""The choice between the rollouts' NumPy path and their compiled loop (numba, optional).

The compiled loop (:mod:`~twinsched.scheduling.lookahead.kernels`) makes the same decisions
as the NumPy path, several times faster. It runs when numba is installed (the ``fast``
extra) unless ``TWINSCHED_LOOKAHEAD_COMPILED=0``; ``=1`` requires it. numba is imported
on the first rollout, never at import time; the first call in a fresh environment compiles
(numba caches the machine code beside the module, ``cache=True``). The same switch
chooses FGD's single-node score (``FragmentationGradient.score_one``): the kernels'
``fgd_one`` or plain Python, the same integers.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import MissingExtraError, TwinschedError
from twinsched.extras import install_hint, require
from twinsched.metrics.fragmentation import TypicalPods
from twinsched.model.cluster import F64, I64

if TYPE_CHECKING:  # (lean imports FGD, whose single-node score asks this module)
    from twinsched.scheduling.lookahead.lean import ClassTable

ENV_VAR = "TWINSCHED_LOOKAHEAD_COMPILED"
_WHY = "the compiled look-ahead needs numba"


def wanted(compiled: bool | None = None) -> bool:
    """Whether rollouts run compiled: ``compiled`` if given, else ``ENV_VAR`` (``0`` or
    ``1``), else whenever numba is installed. Raises if it is required and missing."""
    if compiled is None:
        setting = os.environ.get(ENV_VAR, "").strip()
        if setting not in ("", "0", "1"):
            raise TwinschedError(f"{ENV_VAR} must be 0 or 1, not {setting!r}")
        if setting == "":
            return _have_numba()
        compiled = setting == "1"
    if compiled and not _have_numba():
        raise MissingExtraError(
            install_hint(f"the compiled look-ahead ({ENV_VAR}=1) needs numba", "fast")
        )
    return compiled


@functools.cache
def _have_numba() -> bool:
    return importlib.util.find_spec("numba") is not None


def kernels() -> ModuleType:
    """The compiled rollouts' module (imports numba on first use)."""
    return require("twinsched.scheduling.lookahead.kernels", "fast", _WHY)


def key_kernels() -> ModuleType:
    """The compiled keys' module (imports numba on first use)."""
    return require("twinsched.scheduling.lookahead.key_kernels", "fast", _WHY)


def typical_columns(typical: TypicalPods) -> tuple[I64, I64]:
    """The typical pods as the kernel reads them: rows of (CPU, GPU count, pods, index into
    the distinct GPU milli values), and those values."""
    table = typical.__dict__.get("_kernel_columns")
    if table is None:
        values, index = typical.milli_values
        columns = np.stack([typical.cpu_milli, typical.gpu_count, typical.count, index], axis=1)
        table = typical.__dict__["_kernel_columns"] = (
            np.ascontiguousarray(columns, dtype=np.int64),
            np.ascontiguousarray(values, dtype=np.int64),
        )
    return table


def run(
    live: tuple[I64, I64, I64, I64, I64],
    top: tuple[I64, I64, I64, I64],
    table: ClassTable,
    typical: TypicalPods,
    seeds: tuple[I64, I64, I64, I64],
    seq: I64,
) -> tuple[F64, F64]:
    """The compiled rollouts: ``live`` (CPU, memory, GPU left, model, tie-break), ``top``
    (classes, node, key, GPU), ``seeds`` each candidate's (node, CPU, memory, GPU left)
    after its placement. Returns what :func:`~.rollout.rollouts` returns."""
    typ, values = typical_columns(typical)
    gained, added = kernels().run_rollouts(
        *live, *top, table.rows, table.static,
        typical.allowed_by_model, typ, values, typical.total, *seeds, seq,
    )  # fmt: skip
    return gained.astype(np.float64), added
