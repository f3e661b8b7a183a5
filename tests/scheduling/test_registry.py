from __future__ import annotations

import pytest

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.scheduling import registry
from twinsched.scheduling.plugin_scheduler import PluginScheduler

REQUIRED = {
    "random", "firstfit", "leastallocated", "mostallocated", "balancedallocation", "bestfit",
    "dotprod", "gpupacking", "gpuclustering", "fgd", "labels", "carbon",
}  # fmt: skip


def test_builtins_are_registered() -> None:
    assert set(registry.names()) >= REQUIRED


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown scheduler 'fdg'; known: .*fgd"):
        registry.create("fdg")


def test_duplicates_are_refused() -> None:
    with pytest.raises(TwinschedError, match="already registered"):
        registry.register("fgd")(lambda: registry.create("fgd"))


def test_composition_sums_weighted_plugins() -> None:
    sched = registry.create("leastallocated*2+labels")
    assert isinstance(sched, PluginScheduler)
    assert [(p.name, w) for p, w in sched.plugins] == [("leastallocated", 2), ("labels", 1)]
    with pytest.raises(TwinschedError, match="no score plugins"):
        registry.create("random+labels")
