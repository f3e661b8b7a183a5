"""Harmonisation: other formats into the twin format, with samples aligned on one step.

``harmonize(payload, source=..., step_s=..., base=...)`` reads a DECICE digital twin JSON
(``decice``), flat job/node/sample tables with MIT SuperCloud fields (``tables``), Prometheus
query results (``prometheus``) or a twin document (``twin``), detects which when ``source`` is
``auto``, and returns a :class:`HarmonizeResult`: a valid twin document, the node metric
series (aligned when ``step_s`` is given) and what was dropped why. Pure: no I/O, no FastAPI.

The names are imported on first use (``twinsched/lazy.py``): the twin's API imports
``result`` for its schemas, and the readers (and the trace modules under them) only when it
harmonises.
"""

import typing

from twinsched import lazy

if typing.TYPE_CHECKING:
    from twinsched.traces.conversion import HarmonizeError
    from twinsched.twin.harmonize.core import harmonize
    from twinsched.twin.harmonize.result import (
        SOURCES,
        Dropped,
        HarmonizeResult,
        Series,
        Source,
        SourceOrAuto,
    )

__all__ = [
    "SOURCES",
    "Dropped",
    "HarmonizeError",
    "HarmonizeResult",
    "Series",
    "Source",
    "SourceOrAuto",
    "harmonize",
]

_LAZY = {"harmonize": "core", "HarmonizeError": "core"} | {
    name: "result" for name in ("SOURCES", "Dropped", "HarmonizeResult", "Series", "Source",
                                "SourceOrAuto")
}  # fmt: skip

__getattr__ = lazy.lazy_names(__name__, _LAZY)
