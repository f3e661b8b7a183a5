"""A small typed client of the twin service (httpx), for the simulator and the collectors.

>>> with TwinClient("http://127.0.0.1:8181", token="...") as twin:   # doctest: +SKIP
...     twin.patch(12.0, [{"op": "metrics", "node": "n1", "values": {"cpu_util": 0.5}}])
...     doc = twin.get_state()

Errors answered by the service raise :class:`TwinClientError` with its status and message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Self

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.model.document import TwinDocument
from twinsched.twin import WHY
from twinsched.twin.core.deltas import PatchResult, StatePatch

with needs("twin", WHY):
    import httpx

API = "/api/v1"


class TwinClientError(TwinschedError):
    """The twin answered an error (or could not be reached)."""

    def __init__(self, status: int, detail: str) -> None:
        self.status, self.detail = status, detail
        super().__init__(f"twin answered {status}: {detail}")


class TwinClient:
    """Talk to a twin at ``base_url`` (e.g. ``http://127.0.0.1:8181``); a context manager."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        params: Mapping[str, str] | None = None,
        session: int | None = None,
    ) -> None:
        self.session = session  # the twin session writes name (refused unless it is live)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + API,
            headers=headers,
            timeout=timeout,
            transport=transport,
            params=dict(params or {}),  # sent with every request (e.g. the twin's session)
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise TwinClientError(0, f"{type(exc).__name__}: {exc}") from exc
        if response.is_error:
            try:
                detail = str(response.json().get("detail", response.text))
            except ValueError:
                detail = response.text
            raise TwinClientError(response.status_code, detail)
        return response

    # -- state -----------------------------------------------------------------------------------
    def get_state(self, at: float | None = None) -> TwinDocument:
        """The current document, or the one at or before time ``at``."""
        params = {"at": at} if at is not None else None
        return TwinDocument.model_validate_json(self._send("GET", "/state", params=params).content)

    def get_state_if_changed(self, etag: str = "") -> tuple[str, TwinDocument] | None:
        """The current document and its ``ETag``, or None while the state still has the
        version ``etag`` names (the twin answers 304 without a body)."""
        headers = {"If-None-Match": etag} if etag else None
        response = self._send("GET", "/state", headers=headers)
        if response.status_code == 304:
            return None
        return response.headers.get("ETag", ""), TwinDocument.model_validate_json(response.content)

    def get_versioned_state(self) -> tuple[int, TwinDocument]:
        """The current document and its version (from its ``ETag``; -1 when it has none)."""
        answer = self.get_state_if_changed()
        assert answer is not None  # no ETag sent: never 304
        return etag_version(answer[0]), answer[1]

    def get_state_json(self) -> bytes:
        """The current document as the service serialized it."""
        return self._send("GET", "/state").content

    def put_state(self, document: TwinDocument, source: str | None = None) -> int:
        """Replace the state, in a new session named ``source``; the new version."""
        body = document.model_dump_json().encode()
        params = {"source": source} if source is not None else None
        response = self._send("PUT", "/state", content=body, headers=_JSON, params=params)
        return int(response.json()["version"])

    def patch(
        self, time: float, deltas: Sequence[Mapping[str, Any]] | StatePatch | None = None
    ) -> PatchResult:
        """Apply a batch of deltas (dicts in the ``PATCH /state`` format, or a StatePatch)."""
        if isinstance(deltas, StatePatch):
            body = deltas.model_dump_json(exclude_none=True).encode()
        else:
            import json

            body = json.dumps({"time": time, "deltas": list(deltas or [])}).encode()
        return self.patch_json(body)

    def patch_json(self, body: bytes) -> PatchResult:
        """Apply a batch already serialized as JSON."""
        params = {"session": self.session} if self.session is not None else None
        response = self._send("PATCH", "/state", content=body, headers=_JSON, params=params)
        return PatchResult.model_validate_json(response.content)

    # -- workflows ------------------------------------------------------------------------------
    def submit_workflow(self, submission: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /workflows``: its task pods added (``twin/workflow.py``); what it did."""
        params = {"session": self.session} if self.session is not None else None
        result: dict[str, Any] = self._send("POST", "/workflows", json=submission,
                                            params=params).json()  # fmt: skip
        return result

    def workflow(self, name: str) -> dict[str, Any]:
        """``GET /workflows/NAME``: the workflow as submitted."""
        result: dict[str, Any] = self._send("GET", f"/workflows/{name}").json()
        return result

    # -- changes and the controller lease ---------------------------------------------------------
    def changes(
        self, since: int, *, wait: float = 0.0, limit: int = 10_000, exclude: str | None = None
    ) -> dict[str, Any]:
        """``GET /changes``: ``{"version", "time", "more", "changes": [...]}`` after version
        ``since`` (waiting up to ``wait`` s for one; without those of the broker stream
        ``exclude``); a 410 (not kept: read the state again) raises :class:`TwinClientError`
        with status 410."""
        params: dict[str, Any] = {"since": since, "wait": wait, "limit": limit}
        if exclude is not None:
            params["exclude"] = exclude
        timeout = self._http.timeout.read
        extra = httpx.Timeout(None if timeout is None else timeout + wait)
        response = self._send("GET", "/changes", params=params, timeout=extra)
        result: dict[str, Any] = response.json()
        return result

    def take_lease(self, holder: str, ttl_s: float, session: str | None = None) -> dict[str, Any]:
        """Take or renew the session's controller lease (409 when another holder has it)."""
        params = {"session": session} if session else None
        body = {"holder": holder, "ttl_s": ttl_s}
        result: dict[str, Any] = self._send(
            "PUT", "/leases/controller", json=body, params=params
        ).json()
        return result

    def release_lease(self, holder: str, session: str | None = None) -> None:
        """Give the session's controller lease back."""
        params = {"holder": holder} | ({"session": session} if session else {})
        self._send("DELETE", "/leases/controller", params=params)

    # -- views and history -----------------------------------------------------------------------
    def nodes(self, **filters: str) -> list[dict[str, Any]]:
        """``GET /nodes`` with optional ``nodepool`` and ``status`` filters."""
        result: list[dict[str, Any]] = self._send("GET", "/nodes", params=filters).json()
        return result

    def pods(self, **filters: str) -> list[dict[str, Any]]:
        """``GET /pods`` with optional ``phase``, ``node`` and ``job`` filters."""
        result: list[dict[str, Any]] = self._send("GET", "/pods", params=filters).json()
        return result

    def history(
        self,
        metric: str,
        *,
        node: str | None = None,
        start: float | None = None,
        end: float | None = None,
        step: float | None = None,
        agg: str = "mean",
        session: int | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """``GET /history`` of ``session`` (default: the live one): ``{"series": [{"node",
        "times", "values"}], ...}``."""
        params = {"metric": metric, "node": node, "start": start, "end": end, "step": step,
                  "session": session, "limit": limit}  # fmt: skip
        query = {k: v for k, v in params.items() if v is not None} | {"agg": agg}
        result: dict[str, Any] = self._send("GET", "/history", params=query).json()
        return result

    def sessions(self) -> dict[str, Any]:
        """``GET /sessions``: the live session's number and every session."""
        result: dict[str, Any] = self._send("GET", "/sessions").json()
        return result

    def decisions(self, session: int | None = None, limit: int = 100) -> dict[str, Any]:
        """``GET /decisions``: a session's newest decisions (default: the live session's)."""
        params = {"limit": limit} | ({"session": session} if session is not None else {})
        result: dict[str, Any] = self._send("GET", "/decisions", params=params).json()
        return result

    def ready(self) -> bool:
        """Whether ``/readyz`` answers 200."""
        try:
            self._send("GET", "/readyz")
        except TwinClientError:
            return False
        return True

    # -- what-if ---------------------------------------------------------------------------------
    def whatif(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /whatif``: the job (with its result when the twin had it already)."""
        result: dict[str, Any] = self._send("POST", "/whatif", json=dict(body)).json()
        return result

    def whatif_job(self, job: str) -> dict[str, Any]:
        """``GET /whatif/{job}``: its status, progress, and result or error."""
        result: dict[str, Any] = self._send("GET", f"/whatif/{job}").json()
        return result


_JSON = {"Content-Type": "application/json"}


def etag_version(etag: str) -> int:
    """The state version an ``ETag`` of ``GET /state`` names (``"v12"`` -> 12; -1: none)."""
    digits = etag.strip('W/"').removeprefix("v")
    return int(digits) if digits.isdigit() else -1
