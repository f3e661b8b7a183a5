"""One guard for optional dependencies: the module, or an error naming the extra to install."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType, TracebackType

from twinsched.errors import MissingExtraError


def install_hint(why: str, extra: str) -> str:
    """The message of a missing extra: ``why`` it is needed and the command that installs it."""
    return f"{why}: pip install 'twinsched[{extra}]'"


class _Needs:
    """Turns an :class:`ImportError` raised in its block into a :class:`MissingExtraError`."""

    def __init__(self, hint: str) -> None:
        self.hint = hint

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # An inner guard's message already names what is missing: keep it.
        if isinstance(exc, ImportError) and not isinstance(exc, MissingExtraError):
            raise MissingExtraError(self.hint) from exc


def needs(extra: str, why: str) -> _Needs:
    """A block whose imports, when they fail, raise :class:`MissingExtraError` naming ``extra``.

    For plain ``import`` statements (typed, unlike :func:`require`'s module), e.g.
    ``with needs("ai", "training needs PyTorch"): import torch``.
    """
    return _Needs(install_hint(why, extra))


def data_home() -> Path:
    """twinsched's folder in the user's data directory (platformdirs' answer where it is
    installed: it comes with the ``store`` extra; else ``~/.local/share/twinsched``)."""
    try:
        from platformdirs import user_data_dir
    except ImportError:
        return Path.home() / ".local" / "share" / "twinsched"
    return Path(user_data_dir("twinsched", appauthor=False))


def require(module: str, extra: str, why: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` saying ``why`` and what to install.

    ``why`` reads as the start of the message, e.g. "the ILP schedulers need OR-Tools"; the
    error is both a :class:`TwinschedError` and an :class:`ImportError`.
    """
    with needs(extra, why):
        return importlib.import_module(module)
