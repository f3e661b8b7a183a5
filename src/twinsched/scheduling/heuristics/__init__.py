"""Built-in heuristic schedulers, one module per policy family; importing registers them."""

from twinsched.scheduling.heuristics import (  # noqa: F401
    fgd,
    fgd_study,
    kubernetes,
    labels,
    simple,
)
