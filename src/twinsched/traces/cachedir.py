"""Where twinsched caches what it can rebuild: parsed traces (``traces/cache.py``) and the
empty store new SQLite stores are copied from (``store/template.py``).

``$TWINSCHED_CACHE``, else ``$XDG_CACHE_HOME/twinsched``, else ``~/.cache/twinsched``;
``TWINSCHED_CACHE=off`` turns the cache off. Standard library only: a store command reads it
without importing NumPy.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "TWINSCHED_CACHE"
OFF = "off"


def cache_dir() -> Path | None:
    """The cache folder (see the module doc), or None when the cache is off."""
    chosen = os.environ.get(ENV_VAR, "")
    if chosen == OFF:
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "twinsched"
