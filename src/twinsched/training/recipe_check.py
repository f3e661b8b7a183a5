"""Recipe files checked in one place: bounded reading, one rule per key, TOML written back.

A recipe file is TOML: top-level keys and ``[section]`` tables of keys, each key with a
:class:`Rule` (its accepted values, e.g. ``integer 0..10000``). :func:`read_toml` refuses a
file over :data:`MAX_FILE_BYTES` without reading it whole; :func:`check` refuses an unknown
section or key (naming it and listing the known ones) and a value outside its rule (naming
the file, the key path and the rule), and returns the converted values; :func:`toml_text`
writes values back as TOML that :func:`check` accepts. Every error is a
:class:`RecipeFileError` with a bounded excerpt of the value, never a traceback.

Light on purpose (the standard library only): the CLI imports it when it parses options.
"""

from __future__ import annotations

import json
import math
import tomllib
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError

MAX_FILE_BYTES = 64 * 1024  # a full recipe is about 1.5 kB; seed lists are short arrays
SEED_MAX = 2**32 - 1  # numpy's seed range, as the CLI's --seed
SEEDS_MOST = 10_000  # seeds in one list, as the CLI's --seeds
NAME_MOST = 200  # characters of a name (variant, scheduler, feature)
LIST_MOST = 1000  # names or numbers in one list
Schema = Mapping[str, Mapping[str, "Rule"]]  # section ("" for the top level) -> key -> rule


class RecipeFileError(TwinschedError, ValueError):
    """A recipe file that cannot be read or breaks a rule; the message names file and key."""


@dataclass(frozen=True)
class Rule:
    """The accepted values of one key: ``convert`` raises ValueError on anything else."""

    accepted: str  # shown in errors, e.g. "integer 0..10000"
    convert: Callable[[Any], Any]


def _excerpt(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{_excerpt(value)} is not an integer")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{_excerpt(value)} is not a number")
    return float(value)


def _span(lo: float, hi: float, open_lo: bool = False) -> str:
    return f"{'>' if open_lo else ''}{lo:g}..{hi:g}"


def integer(lo: int, hi: int) -> Rule:
    """An integer in ``lo..hi``."""

    def convert(value: Any) -> int:
        if not lo <= _int(value) <= hi:
            raise ValueError(f"{value} is outside the range")
        return int(value)

    return Rule(f"integer {lo}..{hi}", convert)


def _in(lo: float, hi: float, open_lo: bool) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        number = _number(value)  # nan and inf fall outside every (finite) range
        if not ((number > lo if open_lo else number >= lo) and number <= hi):
            raise ValueError(f"{value} is outside the range")
        return number

    return convert


def number(lo: float, hi: float, open_lo: bool = False) -> Rule:
    """A finite number in ``lo..hi`` (above ``lo`` with ``open_lo``)."""
    return Rule(f"number {_span(lo, hi, open_lo)}", _in(lo, hi, open_lo))


def flag() -> Rule:
    """``true`` or ``false``."""

    def convert(value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"{_excerpt(value)} is not true or false")
        return value

    return Rule("true or false", convert)


NAME_RULE = f"1..{NAME_MOST} characters, no control characters or blanks at either end"


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{_excerpt(value)} is not a string")
    if not value.strip() or len(value) > NAME_MOST or value != value.strip():
        raise ValueError(f"{_excerpt(value)} is not a name")
    if any(unicodedata.category(c).startswith("C") for c in value):
        raise ValueError(f"{_excerpt(value)} holds a control character")
    return value


def name() -> Rule:
    """A name: a string of 1..NAME_MOST printable characters, no blank at either end."""
    return Rule(f"a string of {NAME_RULE}", _name)


def _items(value: Any, least: int, most: int, item: Callable[[Any], Any]) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{_excerpt(value)} is not an array")
    if not least <= len(value) <= most:
        raise ValueError(f"{len(value)} items")
    return tuple(item(v) for v in value)


def array(least: int, of: Rule, most: int = LIST_MOST) -> Rule:
    """An array of ``least..most`` items, each following ``of``; a tuple once converted."""
    return Rule(
        f"an array of {least}..{most} items, each {of.accepted}",
        lambda value: _items(value, least, most, of.convert),
    )


def seeds(least: int = 1) -> Rule:
    """An array of seeds (``least`` to :data:`SEEDS_MOST`), each ``0..SEED_MAX``."""
    return array(least, integer(0, SEED_MAX), SEEDS_MOST)


def names(least: int = 1) -> Rule:
    """An array of names (:func:`name`)."""
    return array(least, name())


def table(key: Rule, value: Rule, most: int = LIST_MOST) -> Rule:
    """A table of up to ``most`` entries; ``((key, value), ...)`` in the file's order."""

    def convert(raw: Any) -> tuple[tuple[Any, Any], ...]:
        if not isinstance(raw, dict):
            raise ValueError(f"{_excerpt(raw)} is not a table")
        if len(raw) > most:
            raise ValueError(f"{len(raw)} entries")
        return tuple((key.convert(k), value.convert(v)) for k, v in raw.items())

    return Rule(f"a table of up to {most} NAME = VALUE, names {key.accepted}, values "
                f"{value.accepted}", convert)  # fmt: skip


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML of ``path``, refused when larger than :data:`MAX_FILE_BYTES`,
    unreadable, not UTF-8, not TOML or nested too deep for the parser."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)  # never more than the limit and a byte
    except OSError as exc:
        raise RecipeFileError(f"{path}: cannot read: {_excerpt(str(exc))}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise RecipeFileError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the limit")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RecipeFileError(f"{path}: not UTF-8: {_excerpt(str(exc))}") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # ValueError: 4,300+ digits
        raise RecipeFileError(f"{path}: not TOML: {_excerpt(str(exc))}") from None
    except RecursionError:  # the parser recurses once per nested array or inline table
        raise RecipeFileError(f"{path}: not TOML: nested too deep") from None


def _unknown(source: str, found: str, known: list[str]) -> RecipeFileError:
    listed = ", ".join(known) or "none"
    return RecipeFileError(f"{source}: unknown key {_excerpt(found)}; known: {listed}")


def _section(
    raw: Mapping[str, Any], rules: Mapping[str, Rule], source: str, prefix: str
) -> dict[str, Any]:
    out = {}
    for key, value in raw.items():
        rule = rules.get(key)
        if rule is None:
            raise _unknown(source, f"{prefix}{key}", sorted(rules))
        try:
            out[key] = rule.convert(value)
        except ValueError as exc:
            raise RecipeFileError(
                f"{source}: {prefix}{key}: {exc}; accepted: {rule.accepted}"
            ) from None
    return out


def check(raw: Mapping[str, Any], schema: Schema, source: str) -> dict[str, dict[str, Any]]:
    """The values of ``raw`` converted by ``schema``'s rules, per section (``""``: the top
    level); only the keys the file gives. Raises :class:`RecipeFileError` on the first
    unknown section or key and the first value outside its rule."""
    top_rules = schema.get("", {})
    out: dict[str, dict[str, Any]] = {"": {}}
    for key, value in raw.items():
        if key in top_rules:
            out[""].update(_section({key: value}, top_rules, source, ""))
        elif key and key in schema:
            if not isinstance(value, dict):
                raise RecipeFileError(
                    f"{source}: {key}: {_excerpt(value)} is not a section; accepted: a "
                    f"[{key}] table"
                )
            out[key] = _section(value, schema[key], source, f"{key}.")
        else:
            known = sorted(top_rules) + [f"[{s}]" for s in sorted(schema) if s]
            raise _unknown(source, key, known)
    return out


def _literal(value: Any) -> str:
    """One TOML value: strings quoted as JSON (valid TOML basic strings), arrays, tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "nan"  # never: the rules refuse it
    if isinstance(value, dict):  # an inline table
        pairs = ", ".join(f"{json.dumps(k)} = {_literal(v)}" for k, v in value.items())
        return f"{{ {pairs} }}" if pairs else "{}"
    return "[" + ", ".join(_literal(v) for v in value) + "]"


def toml_text(values: Mapping[str, Mapping[str, Any]], header: str = "") -> str:
    """``values`` (section -> key -> value, ``""`` first: the top level) as TOML text."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for section, body in values.items():
        if section:
            lines += ["", f"[{section}]"]
        lines += [f"{key} = {_literal(value)}" for key, value in body.items()]
    return "\n".join(lines) + "\n"
