"""A client of the twin's ``/apps`` routes (``twinsched apps ...``): the twin client plus
the applications' calls; an error answer raises :class:`AppsClientError` with every
problem the twin named (a refused deploy: each pod that does not fit, with its reason)."""

from __future__ import annotations

from typing import Any

from twinsched.twin.client import TwinClient, TwinClientError


class AppsClientError(TwinClientError):
    """The twin refused an applications call; ``errors``: ``[{path, problem}]``."""

    def __init__(self, status: int, detail: str, errors: list[dict[str, str]]) -> None:
        super().__init__(status, detail)
        self.errors = errors


class AppsClient(TwinClient):
    """The ``/apps`` calls of a twin."""

    def call(self, method: str, path: str, author: str | None = None, **kwargs: Any) -> Any:
        """``method`` on ``/apps{path}``; the JSON answer."""
        import httpx

        params = {"author": author} if author else {}
        try:
            response = self._http.request(method, f"/apps{path}", params=params, **kwargs)
        except httpx.HTTPError as exc:
            raise AppsClientError(0, f"{type(exc).__name__}: {exc}", []) from exc
        try:
            body = response.json()
        except ValueError:
            body = {"detail": response.text}
        if response.is_error:
            detail = body.get("detail", response.text) if isinstance(body, dict) else str(body)
            errors = body.get("errors", []) if isinstance(body, dict) else []
            raise AppsClientError(response.status_code, str(detail), errors)
        return body

    def register(self, spec: dict[str, Any], author: str | None = None) -> Any:
        return self.call("POST", "", author, json=spec)

    def update(self, ns: str, name: str, spec: dict[str, Any], author: str | None = None) -> Any:
        return self.call("PUT", f"/{ns}/{name}", author, json=spec)

    def action(self, ns: str, name: str, verb: str, author: str | None = None,
               body: dict[str, Any] | None = None) -> Any:  # fmt: skip
        """``deploy``, ``terminate``, ``scale`` (body ``replicas``), ``rollback``."""
        return self.call("POST", f"/{ns}/{name}/{verb}", author, json=body or {})

    def read(self, ns: str, name: str, what: str = "") -> Any:
        """The app (``what`` empty), or its ``revisions``, ``pods``, ``events``, ``usage``,
        ``manifests``."""
        return self.call("GET", f"/{ns}/{name}" + (f"/{what}" if what else ""))

    def apps(self) -> Any:
        return self.call("GET", "")
