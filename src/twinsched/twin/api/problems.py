"""Every error the service answers is JSON: ``{"detail": "...", "errors": [{path, problem}]}``.

``detail`` is one line naming the first bad field (``deltas[3].node: unknown node 'n9'``);
``errors`` lists every problem found, each with its JSON path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException

from twinsched.model.document import DocumentError
from twinsched.model.schema import format_path


class Problem(BaseModel):
    """One bad field."""

    path: str = Field(description="JSON path of the field, e.g. 'deltas[3].node'.")
    problem: str = Field(description="What is wrong with it.")


class ErrorBody(BaseModel):
    """The body of every error answer."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "detail": "deltas[0].node: unknown node 'n9'",
                    "errors": [{"path": "deltas[0].node", "problem": "unknown node 'n9'"}],
                }
            ]
        }
    )

    detail: str = Field(description="What went wrong, naming the first bad field.")
    errors: list[Problem] = Field(default_factory=list, description="Every problem found.")


def error_response(
    status: int,
    detail: str,
    problems: Iterable[tuple[str, str]] = (),
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A JSON error answer."""
    body = {"detail": detail, "errors": [{"path": p, "problem": m} for p, m in problems]}
    return JSONResponse(body, status_code=status, headers=headers)


def problem_response(problems: list[tuple[str, str]], status: int = 422) -> JSONResponse:
    """A 422 naming the first problem in ``detail`` and listing all of them."""
    path, problem = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return error_response(status, f"{path}: {problem}{more}", problems)


def pydantic_problems(errors: Iterable[Mapping[str, Any]], drop: int = 0) -> list[tuple[str, str]]:
    """``(path, message)`` of pydantic errors; union tags (``metrics``...) leave the path."""
    tags = {"metrics", "pod", "pod_add", "node"}
    out = []
    for error in errors:
        loc = list(error["loc"])[drop:]
        if len(loc) >= 3 and loc[0] == "deltas" and isinstance(loc[1], int) and loc[2] in tags:
            del loc[2]
        out.append((format_path(loc), str(error["msg"])))
    return out or [("body", "invalid")]


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Problems of a pydantic ValidationError (body models parsed by hand)."""
    return pydantic_problems(exc.errors(include_url=False))


async def _request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return problem_response(pydantic_problems(exc.errors()))


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        # FastAPI's answer to a body that is not UTF-8: a 422 like any other bad body
        return problem_response([("body", "is not JSON (UTF-8)")])
    return error_response(exc.status_code, str(exc.detail), headers=exc.headers)


async def _document_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DocumentError)
    return problem_response(exc.problems)


async def _delta_error(_: Request, exc: Exception) -> JSONResponse:
    from twinsched.twin.core.service import DeltaError, TimeOrderError

    assert isinstance(exc, DeltaError)
    status = 409 if isinstance(exc, TimeOrderError) else 422
    return problem_response([(exc.path, exc.problem)], status)


async def _session_error(_: Request, exc: Exception) -> JSONResponse:
    from twinsched.twin.core.sessions import SessionError

    assert isinstance(exc, SessionError)
    return problem_response([("session", exc.problem)], exc.status)


async def _too_deep(_: Request, exc: Exception) -> JSONResponse:
    return problem_response([("body", "is nested too deeply")])


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    """A bug, not bad input: still a JSON answer (the traceback goes to the log)."""
    return error_response(500, f"internal error: {exc.__class__.__name__}")


def install(app: FastAPI) -> None:
    """Register the JSON error handlers on ``app``.

    The twin's core (and through it the history store's SQLAlchemy) is imported here, not at
    module level: the scheduler service shares this module's bodies and needs only
    ``twinsched[serve]``."""
    from twinsched.twin.core.service import DeltaError
    from twinsched.twin.core.sessions import SessionError

    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(SessionError, _session_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(DocumentError, _document_error)
    app.add_exception_handler(DeltaError, _delta_error)
    app.add_exception_handler(ValidationError, _validation_error)
    app.add_exception_handler(RecursionError, _too_deep)  # only deeply nested input recurses
    app.add_exception_handler(Exception, _unexpected)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return problem_response(validation_problems(exc))


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorBody, "description": "Invalid input; the body names the field."},
}
WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    401: {"model": ErrorBody, "description": "Missing or wrong bearer token."},
    413: {"model": ErrorBody, "description": "Request body too large."},
    503: {"model": ErrorBody, "description": "The history cannot be written now."},
}
