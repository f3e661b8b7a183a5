"""One guard for optional dependencies: the module, or an error naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from twinsched.errors import MissingExtraError


def install_hint(why: str, extra: str) -> str:
    """The message of a missing extra: ``why`` it is needed and the command that installs it."""
    return f"{why}: pip install 'twinsched[{extra}]'"


def require(module: str, extra: str, why: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` saying ``why`` and what to install.

    ``why`` reads as the start of the message, e.g. "the ILP schedulers need OR-Tools"; the
    error is both a :class:`TwinschedError` and an :class:`ImportError`.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(install_hint(why, extra)) from exc
