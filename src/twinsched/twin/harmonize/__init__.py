"""Harmonisation: other formats into the twin format, with samples aligned on one step.

``harmonize(payload, source=..., step_s=..., base=...)`` reads a DECICE digital twin JSON
(``decice``), flat job/node/sample tables with MIT SuperCloud fields (``tables``), Prometheus
query results (``prometheus``) or a twin document (``twin``), detects which when ``source`` is
``auto``, and returns a :class:`HarmonizeResult`: a valid twin document, the node metric
series (aligned when ``step_s`` is given) and what was dropped why. Pure: no I/O, no FastAPI.
"""

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
