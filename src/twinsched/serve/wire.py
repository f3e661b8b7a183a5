"""Extender request bodies in, answer bytes out, without handling node names one by one.

Most of an extender call's bytes are its ``NodeNames`` list (5,000 names is about 100 kB),
and that list repeats: kube-scheduler sends the same full list for pod after pod, and a
pod's ``prioritize`` call sends the list its ``filter`` call answered, encoded by Go's
``encoding/json`` as this module encoded it (compact, fields in declaration order, so
``NodeNames`` comes last). :class:`Reader` keeps the bytes of the last few lists with the
list they decode to; when a request's ``NodeNames`` bytes are one of them, only the rest of
the body is decoded, and the request gets the same list object (which the cluster's
candidate cache then finds by identity). Anything else is decoded in full by orjson. Both
ways give the same :class:`~twinsched.serve.protocol.ExtenderArgs`; a body that cannot be
read raises :class:`~twinsched.serve.convert.ObjectError` or pydantic's ``ValidationError``
naming the field (a 400).
"""

from __future__ import annotations

from typing import Any

import orjson

from twinsched.serve.convert import ObjectError
from twinsched.serve.protocol import ExtenderArgs

_KEY = b'"NodeNames":'
_SPACE = b" \t\r\n"  # JSON whitespace
_NAMES_FIELDS = ("NodeNames", "node_names")  # what ExtenderArgs folds a key to


class Reader:
    """Reads ``ExtenderArgs`` bodies, keeping the last ``size`` name lists by their bytes."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._kept: list[tuple[bytes, list[str]]] = []

    def read(self, body: bytes) -> ExtenderArgs:
        """The request; its ``node_names`` a list of strings or None."""
        located = _locate(body)
        if located is None:
            return _validated(_loads(body))
        rest, span = located
        names = self._find(span)
        if names is None:
            try:
                value = orjson.loads(span)
            except orjson.JSONDecodeError:  # more than the value (or a bad body): read it all
                return _validated(_loads(body))
            names = _names(value)
            self.keep(span, names)
        args = _validated(rest)
        args.node_names = names
        return args

    def keep(self, encoded: bytes, names: list[str]) -> None:
        """Remember that ``encoded`` decodes to ``names`` (e.g. the names a filter answered)."""
        if len(self._kept) >= self.size:
            del self._kept[0]
        self._kept.append((encoded, names))

    def _find(self, span: bytes) -> list[str] | None:
        kept = self._kept
        for k, (encoded, names) in enumerate(kept):
            if len(encoded) == len(span) and encoded == span:
                if k != len(kept) - 1:
                    kept.append(kept.pop(k))
                return names
        return None


def _locate(body: bytes) -> tuple[dict[str, Any], bytes] | None:
    """The body without its top-level ``NodeNames`` value (decoded, with ``NodeNames`` null),
    and that value's bytes; None unless the body ends with that value (as Go writes it).

    The first ``"NodeNames":`` is taken if it follows a ``{`` or ``,`` (its closing quote
    follows an ``s`` and its opening one no backslash, so neither is an escaped quote inside
    a string), and if the body up to it, with ``null}`` added, decodes: then the key is the
    top-level object's last, and its value is everything up to the last ``}``. That value
    is read as such only if the object has no other key that folds to the field.
    """
    at = body.find(_KEY)
    if at < 0:
        return None
    tail = body.rstrip(_SPACE)  # (the body itself when nothing is stripped: no copy)
    start = at + len(_KEY)
    span = tail[start:-1].strip(_SPACE)
    if tail[-1:] != b"}" or span[:1] != b"[":  # (Go writes "NodeNames":null with Nodes)
        return None
    before = at - 1
    while before >= 0 and body[before] in _SPACE:
        before -= 1
    if before < 0 or body[before] not in b"{,":
        return None
    try:
        rest = orjson.loads(tail[:start] + b"null}")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rest, dict):
        return None
    if sum(ExtenderArgs.field_of(key) in _NAMES_FIELDS for key in rest) != 1:
        return None  # (another spelling of the key comes earlier, and may be read instead)
    return rest, span


def _loads(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ObjectError("document", f"Invalid JSON: {exc}") from None


def _validated(data: Any) -> ExtenderArgs:
    args = ExtenderArgs.model_validate(data)
    if args.node_names is not None:
        args.node_names = _names(args.node_names)
    return args


def _names(value: object) -> list[str]:
    """``value`` if it is a list of strings (checked in C: ``str.join`` takes only strings)."""
    if type(value) is not list:
        raise ObjectError("NodeNames", "Input should be a valid array")
    try:
        "".join(value)
    except TypeError:
        bad = next(k for k, v in enumerate(value) if not isinstance(v, str))
        raise ObjectError(f"NodeNames[{bad}]", "Input should be a valid string") from None
    return value


def filter_answer(
    *,
    names: bytes = b"null",
    nodes: list[dict[str, Any]] | None = None,
    failed: dict[str, str] | None = None,
    error: str = "",
) -> bytes:
    """An ``ExtenderFilterResult`` with the Go field names; ``names``: the ``NodeNames``
    value already encoded (so that the caller can :meth:`Reader.keep` it)."""
    return b"".join((
        b'{"Nodes":', b"null" if nodes is None else b'{"items":' + orjson.dumps(nodes) + b"}",
        b',"NodeNames":', names,
        b',"FailedNodes":', orjson.dumps(failed or {}),
        b',"FailedAndUnresolvableNodes":{},"Error":', orjson.dumps(error), b"}",
    ))  # fmt: skip
