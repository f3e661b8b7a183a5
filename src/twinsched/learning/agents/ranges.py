"""The ranges of an agent file's options, and the checks the schema runs on its strings.

The numbers here are the documented ones (docs/learning.md, "Agent file: every option and
its range"); the schema (:mod:`twinsched.learning.agents.config`) uses them and nothing
else, so ``agent check`` and ``agent run`` accept exactly the same files.
"""

from __future__ import annotations

import re
import time
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, StringConstraints

from twinsched.learning.agents.cron import SEARCH_DAYS, next_cron_time, parse_cron
from twinsched.learning.agents.excerpt import excerpt

MIN_S = 0.1  # the shortest interval, timeout or window: below it a float epoch time cannot step
WEEK_S = 7 * 24 * 3600.0
LAST_START_S = 4_102_444_800.0  # 2100-01-01T00:00:00Z: a first firing after it is a typo
MAX_REPLICAS = 10_000
MAX_STEPS = 100_000
MAX_KEYS = 32  # entries of a selector or of a sensor's reads
# An actuator's limits: their defaults (a file may lower or raise them within the ranges).
MOST = 100  # replicas, 1..MAX_REPLICAS
MAX_STEP = 10  # replicas more or fewer per actuation, 1..MAX_REPLICAS
MIN_INTERVAL_S = 10.0  # seconds between two actuations, 0..MAX_INTERVAL_S
MAX_INTERVAL_S = 24 * 3600.0

Text = Annotated[str, StringConstraints(max_length=253, pattern=r"^[^\x00-\x1f\x7f]*$")]
Name = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[!-~]+$")]
Dns1123Name = Annotated[
    str, StringConstraints(max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
]
Dns1123Label = Annotated[
    str, StringConstraints(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
]
# Kubernetes label grammar (a node selector's keys and values; a tier is a ``tier`` label's
# value): NAME is 1-63 of A-Z a-z 0-9 - _ . starting and ending alphanumeric, a key may have a
# DNS-subdomain PREFIX/ of at most 253; a value is empty or a NAME.
_LABEL_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}")
_LABEL_VALUE = re.compile(rf"(?:{_LABEL_NAME})?")
LABEL_KEY_RULE = (
    "[PREFIX/]NAME: NAME 1-63 of A-Z a-z 0-9 - _ . (alphanumeric at both ends), "
    "PREFIX a DNS subdomain of at most 253"
)
LABEL_VALUE_RULE = "0-63 of A-Z a-z 0-9 - _ . (alphanumeric at both ends)"


def _label_key(key: str) -> str:
    if not _LABEL_KEY.fullmatch(key):
        raise ValueError(f"{excerpt(key)} is not a label key: {LABEL_KEY_RULE}")
    return key


def _label_value(value: str) -> str:
    if not _LABEL_VALUE.fullmatch(value):
        raise ValueError(f"{excerpt(value)} is not a label value: {LABEL_VALUE_RULE}")
    return value


# max_length first: a huge string is refused before any pattern runs on it.
LabelKey = Annotated[str, StringConstraints(max_length=317), AfterValidator(_label_key)]
LabelValue = Annotated[str, StringConstraints(max_length=63), AfterValidator(_label_value)]
LabelName = Annotated[  # a label value that is not empty: a tier
    str, StringConstraints(min_length=1, max_length=63), AfterValidator(_label_value)
]
_URL_CHARS = re.compile(r"[!-~]+")  # printable ASCII, no space: what an HTTP client sends


def check_url(cls: type, url: str) -> str:
    """An ``http(s)://host[:port][/path]`` URL of printable ASCII; ValueError otherwise."""
    if not _URL_CHARS.fullmatch(url):
        raise ValueError(f"{excerpt(url)} has a space, a control or a non-ASCII character")
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError when it is not 0-65535
    except ValueError:
        raise ValueError(f"{excerpt(url)} is not a URL (a port is 1-65535)") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{excerpt(url)}: accepted http://HOST[:PORT] or https://...")
    if port == 0 or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{excerpt(url)}: a base URL (port 1-65535, no query, user or #)")
    return url


def check_cron(cls: type, expression: str | None) -> str | None:
    """A cron expression that parses and fires in the next eight years (``0 0 31 2 *``,
    31 February, never does); ValueError naming the problem otherwise."""
    if expression is None:
        return None
    spec = parse_cron(expression)  # ValueError names the cron field
    if next_cron_time(spec, time.time()) is None:
        years = SEARCH_DAYS // 366
        raise ValueError(f"cron {excerpt(expression)} never fires (no match in {years} years)")
    return expression
