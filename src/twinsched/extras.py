"""One guard for optional dependencies: the module, or an error naming the extra to install."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from twinsched.errors import MissingExtraError


def require(module: str, extra: str, why: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` saying ``why`` and what to install.

    ``why`` reads as the start of the message, e.g. "the ILP schedulers need OR-Tools"; the
    error is both a :class:`TwinschedError` and an :class:`ImportError`.
    """
    try:
        return import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"{why}: pip install 'twinsched[{extra}]'") from exc
