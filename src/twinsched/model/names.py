"""Names that become folder names, file names and store keys: one grammar, one check.

A sweep's name is a store key and, by default, the folder of its report (``out/sweeps/NAME``),
so it must never climb out of that folder or carry bytes a database refuses (PostgreSQL has no
NUL in text). The grammar (``docs/sweeps.md``): 1 to :data:`NAME_MAX` characters, ASCII
letters, digits, ``.``, ``_`` and ``-``, starting with a letter or a digit, so ``.``, ``..``,
``-x`` and hidden names are impossible. :func:`confined` is the second line of defence: it
resolves a path below a folder and refuses one that lands outside it, whatever made it.
"""

from __future__ import annotations

import re
from pathlib import Path

from twinsched.errors import TwinschedError

NAME_MAX = 64
NAME_RULE = f"1-{NAME_MAX} ASCII letters, digits, '.', '_' or '-', starting with a letter or digit"
_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}", re.ASCII)


class BadNameError(TwinschedError, ValueError):
    """A name breaks the grammar; the message quotes a bounded excerpt and states the rule."""


def check_safe_name(name: object, what: str = "name") -> str:
    """``name`` when it follows the grammar (module docstring), else :class:`BadNameError`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        shown = repr(name) if len(repr(name)) <= 80 else f"{repr(name)[:77]}..."
        raise BadNameError(f"bad {what} {shown}: use {NAME_RULE}")
    return name


def confined(base: Path, *parts: str) -> Path:
    """``base/parts...`` resolved, when it stays inside ``base`` (resolved); else raise."""
    root = base.resolve()
    target = root.joinpath(*parts).resolve()
    if target != root and not target.is_relative_to(root):
        raise BadNameError(f"{'/'.join(parts)!r:.80} would write outside {base}")
    return target
