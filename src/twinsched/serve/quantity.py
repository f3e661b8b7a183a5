"""Kubernetes resource quantities (``500m``, ``16Gi``, ``1e3``), read with bounds first.

The one reader of quantities in the project: node capacities and pod requests, from
``POST /filter``, ``/prioritize``, ``/nodes``, ``/pods`` and ``scheduler serve --nodes``,
all go through :func:`quantity`. It follows Kubernetes' grammar
(``k8s.io/apimachinery/pkg/api/resource``)::

    quantity ::= [+-] number suffix
    number   ::= digits | digits "." digits? | "." digits
    suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | "" | k | M | G | T | P | E
               | ("e" | "E") [+-] digits

and checks the text and its exponent before any arithmetic: at most :data:`MAX_LENGTH`
characters, an exponent within ``±MAX_EXPONENT``; so no number it builds is large
(``1e999999`` used to cost 88 s of the event loop in ``int()``, ``1e1000000`` raised
``decimal.Overflow``). The value, in the caller's unit, must be finite, >= 0 and at most
:data:`MAX_VALUE` (``docs/deploy.md``).
"""

from __future__ import annotations

import math
import re
from decimal import Context, Decimal

from twinsched.serve.errors import ObjectError

MAX_LENGTH = 64  # characters; Kubernetes writes at most about 30 for an int64 quantity
MAX_EXPONENT = 99  # |e| of a decimal exponent ("1e99")
MAX_VALUE = 2**53  # in the caller's unit (millicores, MiB, GPUs, milli-GPU): exact in a float
ONE = Decimal(1)
UNITS = {"": ONE, "millis": Decimal("0.001"), "MiB": Decimal(2**20)}
_INT_BITS = 3 * MAX_LENGTH  # a JSON integer of more bits has over MAX_LENGTH digits
_SUFFIX = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": ONE,
    "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
    "P": Decimal(10**15), "E": Decimal(10**18), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
    "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}  # fmt: skip
# ASCII digits only ([0-9], not \d: Decimal() would read Arabic-Indic digits too); an "E"
# followed by digits is an exponent, a bare one the exa suffix, as in Kubernetes
_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>[KMGTPE]i|[numkMGTPE]?))"
)
# exact arithmetic on what the bounds let through: <= 64 digits scaled by <= 10^(99+18)
_EXACT = Context(prec=400, Emax=1000, Emin=-1000)
GRAMMAR_HINT = "a number with an optional SI suffix (m, k, Mi, Gi, ...) or exponent (e3)"
# Quantities read before, as (text, unit) -> amount: a cluster's pods repeat a few dozen
# values; bounded, and only values that passed every check go in.
_SEEN: dict[tuple[str, str], Decimal] = {}
SEEN_MOST = 4096


def quantity(value: object, where: str, unit: str = "") -> Decimal:
    """A Kubernetes quantity as a number of ``unit`` (``""``: as written, ``"millis"``:
    thousandths, ``"MiB"``: mebibytes): finite, >= 0 and at most :data:`MAX_VALUE`.

    JSON numbers are read as their text. Raises :class:`ObjectError` naming ``where`` and
    the accepted form or range; nothing slow or unbounded is computed before the checks.
    """
    if type(value) is str:
        seen = _SEEN.get((value, unit))
        if seen is not None:
            return seen
    text = _text(value, where)
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        raise ObjectError(where, f"not a Kubernetes quantity: {text!r} ({GRAMMAR_HINT})")
    exponent = int(match["exponent"] or 0)  # at most MAX_LENGTH digits: cheap
    if abs(exponent) > MAX_EXPONENT:
        raise ObjectError(
            where, f"exponent out of range [-{MAX_EXPONENT}, {MAX_EXPONENT}]: {text!r}"
        )
    scaled = Decimal(match["number"]).scaleb(exponent, _EXACT)
    amount = _EXACT.divide(_EXACT.multiply(scaled, _SUFFIX[match["suffix"] or ""]), UNITS[unit])
    if (match["sign"] == "-" and amount != 0) or amount > MAX_VALUE:
        accepted = f"[0, 2^53]{' ' + unit if unit else ''}"
        raise ObjectError(where, f"{text!r} is outside the accepted range {accepted}")
    if type(value) is str and len(_SEEN) < SEEN_MOST:
        _SEEN[(value, unit)] = amount
    return amount


def _text(value: object, where: str) -> str:
    """The quantity's text: a string as it is, a JSON number as written (bounded first)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ObjectError(where, f"not a Kubernetes quantity: a {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ObjectError(where, f"must be a finite quantity, got {value!r}")
    if isinstance(value, int) and value.bit_length() > _INT_BITS:  # before str(): no huge text
        raise ObjectError(where, f"out of range: a number of {value.bit_length()} bits")
    text = value if isinstance(value, str) else repr(value)
    if len(text) > MAX_LENGTH:
        raise ObjectError(
            where, f"a quantity of {len(text)} characters (at most {MAX_LENGTH}): {text[:20]!r}..."
        )
    return text
