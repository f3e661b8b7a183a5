"""The twin JSON format's draft-07 JSON Schema, generated from the models, and validation.

The schema shipped as ``schemas/twin-v1.json`` is generated from :mod:`twinsched.model.document`;
regenerate it with ``python -m twinsched.model.schema`` after changing the models (a test fails
when it drifts). Validation reports every problem with its field path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twinsched.model.document import (
    DRAFT_07,
    SCHEMA_FILE,
    SCHEMA_ID,
    DocumentError,
    TwinDocument,
)
from twinsched.model.problems import FieldProblem
from twinsched.model.problems import format_path as format_path


# -- the JSON Schema ----------------------------------------------------------------------------
def twin_json_schema() -> dict[str, Any]:
    """The draft-07 JSON Schema of :class:`TwinDocument`, generated from the models."""
    schema = _to_draft07(TwinDocument.model_json_schema(mode="validation"))
    assert isinstance(schema, dict)
    schema["definitions"] = schema.pop("$defs", {})
    return {"$schema": DRAFT_07, "$id": SCHEMA_ID, **schema}


def _to_draft07(node: Any) -> Any:
    """Rename ``$defs`` refs; wrap a ``$ref`` that has siblings (draft-07 ignores them);
    tuples' ``prefixItems`` become draft-07's ``items`` array."""
    if isinstance(node, list):
        return [_to_draft07(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _to_draft07(value) for key, value in node.items()}
    if "prefixItems" in out:  # a tuple: draft-07 writes its items as an array
        out["items"] = out.pop("prefixItems")
        out["additionalItems"] = False
    ref = out.get("$ref")
    if isinstance(ref, str):
        out["$ref"] = ref.replace("#/$defs/", "#/definitions/")
        if len(out) > 1:
            out["allOf"] = [{"$ref": out.pop("$ref")}]
    return out


def shipped_schema_path() -> Path:
    """Where the schema file lives in the source tree."""
    return Path(__file__).parent / "schemas" / SCHEMA_FILE


def write_schema(path: Path | None = None) -> Path:
    """Write :func:`twin_json_schema` as indented JSON (default: the shipped file)."""
    target = path or shipped_schema_path()
    target.write_text(json.dumps(twin_json_schema(), indent=2) + "\n", encoding="utf-8")
    return target


def load_schema() -> dict[str, Any]:
    """The schema shipped in the package (read with importlib.resources)."""
    text = resources.files("twinsched.model").joinpath("schemas", SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# -- validation ---------------------------------------------------------------------------------
@cache
def _validator() -> Any:
    from jsonschema import Draft7Validator

    return Draft7Validator(load_schema())


def validate_document(data: Mapping[str, Any]) -> TwinDocument:
    """Check ``data`` against the schema and the cross-field rules; return the model.

    Raises :class:`DocumentError` naming the JSON path of the first bad field, e.g.
    ``nodepools[0].nodes[3].hardware.cpu_milli: must be > 0``. The models in strict mode
    are at least as strict as the schema generated from them, so they run first (they are
    fast); the schema runs only on a rejected document, to name its first bad field.
    """
    try:
        return TwinDocument.model_validate(data, strict=True)
    except ValidationError as exc:
        pydantic_problems = [_pydantic_problem(e) for e in exc.errors()]
    errors = sorted(_validator().iter_errors(data), key=lambda e: _path_key(e.absolute_path))
    raise DocumentError([_schema_problem(e) for e in errors] or pydantic_problems)


def parse_document(data: Mapping[str, Any]) -> TwinDocument:
    """The model of ``data`` (pydantic rules, lax types, no schema); raises DocumentError."""
    try:
        return TwinDocument.model_validate(data)
    except ValidationError as exc:
        raise DocumentError([_pydantic_problem(e) for e in exc.errors()]) from None


def _join(base: str, sub: str) -> str:
    return sub if base == "document" else f"{base}.{sub}"


def _path_key(path: Iterable[str | int]) -> list[tuple[int, int, str]]:
    return [(1, 0, p) if isinstance(p, str) else (0, p, "") for p in path]


_SCHEMA_WORDS = {
    "minimum": "must be >= {}",
    "exclusiveMinimum": "must be > {}",
    "maximum": "must be <= {}",
    "exclusiveMaximum": "must be < {}",
    "const": "must be {!r}",
    "enum": "must be one of {}",
}


def _schema_problem(error: Any) -> tuple[str, str]:
    while error.context:  # anyOf/oneOf: report the alternative that got furthest
        error = sorted(error.context, key=lambda e: (e.validator == "type", -len(e.path)))[0]
    path, rule, value = format_path(error.absolute_path), error.validator, error.validator_value
    if rule in _SCHEMA_WORDS:
        return path, _SCHEMA_WORDS[rule].format(value)
    if rule == "type":
        return path, f"must be of type {value}, got {type(error.instance).__name__}"
    if rule == "required":
        missing = next(k for k in value if k not in error.instance)
        return _join(path, missing), "is required"
    if rule == "additionalProperties":
        extra = next(k for k in error.instance if k not in error.schema.get("properties", {}))
        return _join(path, extra), "unknown field"
    if rule == "pattern":
        return path, f"{error.instance!r} does not match {value}"
    if rule == "minLength" and value == 1:
        return path, "must not be empty"
    return path, str(error.message)


_PYDANTIC_WORDS = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "missing": "is required",
    "extra_forbidden": "unknown field",
}


def _pydantic_problem(error: Mapping[str, Any]) -> tuple[str, str]:
    path = format_path(error["loc"])
    ctx = error.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, FieldProblem):
        return _join(path, cause.path), cause.problem
    words = _PYDANTIC_WORDS.get(error["type"])
    return path, words.format(**ctx) if words else str(error["msg"])


if __name__ == "__main__":
    print(f"wrote {write_schema()}")
