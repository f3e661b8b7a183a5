"""A small cron expression parser: five fields, ``*``, lists, ranges, steps, names, aliases.

``minute hour day-of-month month day-of-week``; day of week 0-7 (0 and 7 are Sunday) or
``sun``..``sat``; months 1-12 or ``jan``..``dec``. As in Vixie cron, when both day fields are
restricted a day matches if *either* matches. Times are seconds since the epoch, read as UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from twinsched.learning.agents.excerpt import excerpt

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_NAMES: tuple[dict[str, int], ...] = ({}, {}, {}, _MONTHS, _DAYS)
SEARCH_DAYS = 366 * 8  # long enough for 29 February in any leap-year cycle


@dataclass(frozen=True)
class CronSpec:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool


def parse_cron(expression: str) -> CronSpec:
    """Parse a cron expression; bad input raises ValueError naming the field."""
    text = ALIASES.get(expression.strip().lower(), expression.strip().lower())
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(
            f"a cron expression has 5 fields, got {len(fields)}: {excerpt(expression)}"
        )
    sets = [_field(f, i) for i, f in enumerate(fields)]
    weekdays = frozenset(d % 7 for d in sets[4])
    return CronSpec(
        frozenset(sets[0]),
        frozenset(sets[1]),
        frozenset(sets[2]),
        frozenset(sets[3]),
        weekdays,
        days_restricted=fields[2] != "*",
        weekdays_restricted=fields[4] != "*",
    )


def _field(text: str, index: int) -> set[int]:
    lo, hi = _BOUNDS[index]
    names = _NAMES[index]
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = _number(step_text, names) if step_text else 1
        if body == "*":
            start, stop = lo, hi
        elif "-" in body:
            a, b = body.split("-", 1)
            start, stop = _number(a, names), _number(b, names)
        else:
            start = _number(body, names)
            stop = hi if step_text else start
        if not (lo <= start <= stop <= hi) or step < 1:
            raise ValueError(f"cron field {index + 1} ({excerpt(text)}) is outside {lo}-{hi}")
        values.update(range(start, stop + 1, step))
    return values


def _number(text: str, names: dict[str, int]) -> int:
    if text in names:
        return names[text]
    if not (text.isascii() and text.isdigit()):  # not '²', which int() refuses
        raise ValueError(f"not a cron number or name: {excerpt(text)}")
    return int(text)


def _day_matches(spec: CronSpec, day: datetime) -> bool:
    if day.month not in spec.months:
        return False
    dom = day.day in spec.days
    dow = (day.weekday() + 1) % 7 in spec.weekdays
    if spec.days_restricted and spec.weekdays_restricted:
        return dom or dow
    return dom and dow


def next_cron_time(spec: CronSpec, after: float) -> float | None:
    """The first matching minute strictly after ``after`` (epoch seconds), or None."""
    first = datetime.fromtimestamp((int(after // 60) + 1) * 60, UTC)
    hours, minutes = sorted(spec.hours), sorted(spec.minutes)
    day = first.replace(hour=0, minute=0)
    for offset in range(SEARCH_DAYS):
        current = day + timedelta(days=offset)
        if not _day_matches(spec, current):
            continue
        for hour in hours:
            for minute in minutes:
                moment = current.replace(hour=hour, minute=minute)
                if moment >= first:
                    return moment.timestamp()
    return None
