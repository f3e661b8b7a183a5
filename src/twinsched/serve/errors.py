"""The error of a Kubernetes object or field the scheduler service cannot read (a 400)."""

from __future__ import annotations

from twinsched.errors import TwinschedError


class ObjectError(TwinschedError):
    """A Kubernetes object the service cannot read: ``field`` names the JSON path."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem
