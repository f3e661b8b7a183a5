"""quick_init: a faster __init__ for the frozen, slotted values made on the hot path, with
everything else the dataclass's."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from twinsched.model.events import Arrive, Bind, Reject, Release
from twinsched.model.values import quick_init
from twinsched.scheduling.framework import Placement, Reason, Unschedulable


def test_values_keep_the_dataclass_behaviour() -> None:
    bind = Bind(1, 2)
    assert bind == Bind(pod=1, node=2, gpus=()) and hash(bind) == hash(Bind(1, 2, ()))
    assert repr(bind) == "Bind(pod=1, node=2, gpus=())"
    assert pickle.loads(pickle.dumps(bind)) == bind and copy.copy(bind) == bind
    assert Arrive(3) != Release(3) and Arrive(3).pod == 3
    assert Placement(4) == Placement(node=4, gpus=(), score=0)
    assert Unschedulable(Reason.NO_ELIGIBLE_NODE).detail == ""
    assert Reject(5, "x").reason == "x"
    with pytest.raises(FrozenInstanceError):
        bind.pod = 7  # type: ignore[misc]
    with pytest.raises(TypeError):
        Bind(1)  # type: ignore[call-arg]
    match Arrive(6):
        case Arrive(pod):
            assert pod == 6


def test_quick_init_refuses_what_it_would_get_wrong() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            return None

    @dataclass(slots=True)
    class Mutable:
        a: int

    for cls in (NoSlots, Factory, Post, Mutable):
        with pytest.raises(TypeError):
            quick_init(cls)
