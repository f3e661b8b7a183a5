"""Scheduler names parsed into a tree, checked without building, built bottom-up (issue 32)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.scheduling import registry
from twinsched.scheduling.fanout.ensemble import Ensemble
from twinsched.scheduling.ilp.scheduler import IlpScheduler
from twinsched.scheduling.names import (
    Aggregate,
    Bandit,
    BanditParams,
    Ilp,
    IlpParams,
    Leaf,
    Lookahead,
    LookaheadParams,
    Sum,
    parse,
)

SCHEDULING = Path(registry.__file__).parent


def test_names_parse_into_a_tree() -> None:
    assert parse("ilp-alloc/w=64/t=2") == Leaf("ilp-alloc", (("w", 64), ("t", 2)))
    assert parse("bestfit*3+labels") == Sum(
        "bestfit*3+labels", ((Leaf("bestfit"), 3), (Leaf("labels"), 1))
    )
    assert parse("lookahead:fgd/c=2") == Lookahead(Leaf("fgd"), LookaheadParams(c=2))
    assert parse("aggregate:fgd@2|a+b") == Aggregate(
        "aggregate:fgd@2|a+b",
        (("fgd", Leaf("fgd")), ("a+b", Sum("a+b", ((Leaf("a"), 1), (Leaf("b"), 1))))),
        (("fgd", 2.0),),
    )
    tree = parse("bandit/l=4:fgd|bestfit")
    assert tree == Bandit(
        "bandit/l=4:fgd|bestfit",
        BanditParams(l=4),
        (("fgd", Leaf("fgd")), ("bestfit", Leaf("bestfit"))),
    )


def test_check_types_the_ilp_leaves_and_checks_every_member() -> None:
    assert registry.check("ilp-frag/w=8") == Ilp("ilp-frag", IlpParams(w=8))
    with pytest.raises(UnknownNameError, match=r"unknown scheduler 'nope'; known: .*fgd"):
        registry.check("aggregate:fgd|bestfit+nope")
    with pytest.raises(TwinschedError, match=r"'ilp-alloc/w=8/x=1': parameters are w \(window"):
        registry.check("ilp-alloc/w=8/x=1")
    with pytest.raises(TwinschedError, match="'aggregate:' names no members"):
        registry.check("aggregate:")
    with pytest.raises(TwinschedError, match="'ilp-alloc' has no score plugins"):
        registry.check("ilp-alloc+labels")


def test_check_builds_nothing() -> None:
    """Checking a name imports no composite, solver or model code (a fresh interpreter)."""
    names = ["ilp-alloc/w=4", "lookahead:fgd/c=2", "aggregate:fgd|bestfit", "bandit:fgd|random",
             "ai:openb-rerank", "bestfit*2+labels"]  # fmt: skip
    heavy = ["twinsched.scheduling.ilp.scheduler", "twinsched.scheduling.fanout.ensemble",
             "twinsched.scheduling.fanout.bandit", "twinsched.scheduling.lookahead.scheduler",
             "twinsched.scheduling.ai.rerank", "ortools", "torch"]  # fmt: skip
    code = (
        "import sys\nfrom twinsched.scheduling import registry\n"
        f"for n in {names!r}: registry.check(n)\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_composites_get_their_parts_as_instances() -> None:
    ens = registry.create("aggregate:fgd|ilp-alloc/w=4")
    assert isinstance(ens, Ensemble)
    assert [m.name for m in ens.members] == ["fgd", "ilp-alloc/w=4"]  # built before any reset
    ilp = ens.members[1]
    assert isinstance(ilp, IlpScheduler) and ilp._hint.name == "fgd"


def test_no_plugin_imports_the_registry() -> None:
    """Composites never build parts by name: only the registry module names the registry."""
    users = []
    for path in SCHEDULING.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (
                node.module == "twinsched.scheduling.registry"
                or (
                    node.module == "twinsched.scheduling"
                    and any(a.name == "registry" for a in node.names)
                )
            ):
                users.append(path.relative_to(SCHEDULING).as_posix())
    assert users == []
