"""Small parsers shared by the converters: numbers, labels, ids, GPU bindings."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def array(value: Any) -> list[Any]:
    """``value`` if it is an array, else an empty one."""
    return value if isinstance(value, list) else []


def number(value: Any) -> float:
    """A finite float from a JSON number or a numeric string; ValueError says why not."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"non-numeric value {value!r}")
    try:
        out = float(value)
    except (ValueError, OverflowError):
        raise ValueError(f"non-numeric value {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"non-finite value {value!r}")
    return out


def first_huge(data: Any, limit: float = 2**63, at: str = "document") -> str | None:
    """The path (``a.b[0]``) of the first number in decoded JSON beyond ``±limit``, or None.

    JSON integers have no size; a 20-digit one would overflow every integer column.
    """
    if isinstance(data, bool):
        return None
    if isinstance(data, int | float):
        return at if not -limit < data < limit else None
    items: Any = ()
    if isinstance(data, Mapping):
        items = ((f"{at}.{k}" if at != "document" else str(k), v) for k, v in data.items())
    elif isinstance(data, list):
        items = ((f"{at}[{i}]", v) for i, v in enumerate(data))
    for where, value in items:
        found = first_huge(value, limit, where)
        if found is not None:
            return found
    return None


def percent(value: Any) -> float:
    """A percentage in [0, 100] as a fraction in [0, 1]; ValueError says why not."""
    v = number(value)
    if not 0 <= v <= 100:
        raise ValueError(f"{v:g} is outside [0, 100] %")
    return v / 100


def whole(value: Any, minimum: int = 0, maximum: int = 2**53) -> int:
    """A whole number in ``[minimum, maximum]`` (``'20'``, ``20.0`` and ``20`` all give 20)."""
    out = number(value)
    if out != int(out):
        raise ValueError(f"{value!r} is not a whole number")
    if not minimum <= out <= maximum:
        raise ValueError(f"{value!r} is outside the accepted range [{minimum}, {maximum}]")
    return int(out)


def scaled(value: Any, factor: float, maximum: float) -> int:
    """``round(value * factor)`` for a number whose product lies in ``[0, maximum]``."""
    out = number(value) * factor
    if not 0 <= out <= maximum:
        raise ValueError(f"{value!r} is outside the accepted range [0, {maximum / factor:g}]")
    return round(out)


def ident(value: Any) -> str:
    """An id from a non-empty string or a number (ids written as floats lose their '.0').

    Control characters (NUL included) are refused, as the twin document's ids refuse them.
    """
    if isinstance(value, str) and value.strip():
        if _CONTROL.search(value.strip()):
            raise ValueError(f"not an id: {value!r} has a control character")
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(int(value)) if value == int(value) else str(value)
    raise ValueError(f"not an id: {value!r}")


def label_value(value: Any) -> str:
    """A label value from a JSON scalar; ValueError for objects and lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ValueError(f"label values must be scalars, got {type(value).__name__}")


def label_pair(text: Any) -> str:
    """``'key:value'`` (DECICE) or ``'key=value'`` (twin) as ``'key=value'``."""
    if not isinstance(text, str):
        raise ValueError(f"labels must be strings, got {type(text).__name__}")
    for sep in ("=", ":"):
        key, found, value = text.partition(sep)
        if found and key:
            return f"{key}={value}"
    raise ValueError(f"label {text!r} is neither key=value nor key:value")


def epoch(value: Any) -> float:
    """Epoch seconds from a number or an ISO 8601 string (``Z`` or an offset; naive = UTC)."""
    if isinstance(value, str):
        try:
            return number(value)
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"not a time: {value!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return number(value)


class GpuBinder:
    """Hands out whole free GPUs of document nodes to running pods, in index order."""

    def __init__(self, nodes: dict[str, dict[str, Any]]) -> None:
        self._hardware = {name: node["hardware"] for name, node in nodes.items()}

    def bind(self, node: str, count: int) -> list[int] | None:
        """Indices of ``count`` free GPUs on ``node`` (now marked used), or None if too few."""
        if count == 0:
            return []
        hardware = self._hardware[node]
        free = hardware.get("gpu_milli_free") or [MILLI_PER_GPU] * hardware.get("gpu_count", 0)
        hardware["gpu_milli_free"] = free
        chosen = [g for g, milli in enumerate(free) if milli == MILLI_PER_GPU][:count]
        if len(chosen) < count:
            return None
        for g in chosen:
            free[g] = 0
        return chosen
