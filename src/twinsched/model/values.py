"""Small immutable values made once or more per decision: a faster ``__init__``.

A frozen dataclass sets each field with ``object.__setattr__`` (its own ``__setattr__``
refuses); a slotted one can set them through the slots' descriptors instead, at about half
the cost. :func:`quick_init` gives such a class that ``__init__``; everything else (equality,
hashing, ``repr``, refusal to change, pickling, ``match``) stays the dataclass's.
"""

from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """``cls`` (a frozen, slotted dataclass without ``__post_init__`` or default factories)
    with an ``__init__`` that sets the slots through their descriptors."""
    params_of = getattr(cls, "__dataclass_params__", None)
    if not (is_dataclass(cls) and params_of is not None and params_of.frozen):
        raise TypeError(f"{cls.__name__} is not a frozen dataclass")
    if "__slots__" not in vars(cls):
        raise TypeError(f"{cls.__name__} has no slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__: quick_init would skip it")
    scope: dict[str, Any] = {}
    params, lines = [], []
    for f in fields(cls):
        if f.default_factory is not MISSING or f.kw_only or not f.init:
            raise TypeError(f"{cls.__name__}.{f.name}: a default factory, or not positional")
        if f.default is MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        scope[f"_set_{f.name}"] = getattr(cls, f.name).__set__  # the slot's descriptor
        lines.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines or ["    pass"])
    made: dict[str, Any] = {}
    exec(source, scope, made)  # as dataclasses makes its own __init__
    init = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
