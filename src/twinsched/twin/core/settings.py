"""Typed settings of the twin service, read from the environment (``TWINSCHED_TWIN_*``).

A write token is required: the service refuses to start with an empty token or a known weak
one (``changeme``, ``secret``, shorter than 16 characters, ...) unless ``dev`` is set. In dev
mode without a token, write routes are open; that is only for a loopback test bench.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from twinsched.errors import TwinschedError

ENV_PREFIX = "TWINSCHED_TWIN_"
MIN_TOKEN_LENGTH = 16
WEAK_TOKENS = frozenset(
    {"changeme", "change-me", "secret", "token", "default", "password", "admin", "twinsched",
     "dev", "test", "1234567890123456", "0000000000000000", "changethis"}
)  # fmt: skip


class SettingsError(TwinschedError):
    """The twin settings are invalid or unsafe; the message names the setting."""


class TwinSettings(BaseModel):
    """What the twin service needs to start. Every field has a ``TWINSCHED_TWIN_<NAME>`` env."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: SecretStr = Field(SecretStr(""), description="Bearer token required by write routes.")
    db: str = Field("", description="History database URL or SQLite path; '' = the store's.")
    dev: bool = Field(False, description="Allow an empty or weak token (loopback test benches).")
    read_token_required: bool = Field(
        False, description="Reads need a token too (a read, write or admin one; docs/security.md)."
    )
    max_body_bytes: int = Field(32 * 2**20, gt=0, description="Largest request body accepted.")
    harmonize_max_body_bytes: int = Field(
        4 * 2**20,
        gt=0,
        description="Largest body of POST /harmonize (its memory grows about 40x its body).",
    )
    retention_s: float | None = Field(
        None, gt=0, description="Drop samples older than this (twin time); None = keep all."
    )
    downsample_after_s: float | None = Field(
        None, gt=0, description="Average samples older than this into downsample_step_s buckets."
    )
    downsample_step_s: float = Field(60.0, gt=0, description="Bucket width of downsampling.")
    compact_interval_s: float | None = Field(
        None, gt=0, description="Run retention and downsampling this often (wall seconds)."
    )
    predict_retrain_s: float | None = Field(
        None, gt=0, description="Retrain the predictive models this often (wall seconds)."
    )
    predict_window_s: float = Field(
        86_400.0, gt=0, description="History (twin seconds) the predictive models learn from."
    )
    predict_contamination: float = Field(
        0.01, gt=0, le=0.5, description="Share of samples the anomaly forest expects odd."
    )
    snapshot_every: int = Field(
        20_000, gt=0, description="Write a full snapshot after this many deltas since the last."
    )
    decisions_kept: int = Field(
        1000, ge=1, le=100_000, description="Decisions (bindings) kept per session, newest."
    )

    @model_validator(mode="after")
    def _safe_token(self) -> Self:
        problem = token_problem(self.token.get_secret_value())
        if problem and not self.dev:
            raise ValueError(f"token: {problem} (set {ENV_PREFIX}TOKEN, or use --dev)")
        if self.read_token_required and not self.auth_required:
            raise ValueError(f"read_token_required: needs a token (set {ENV_PREFIX}TOKEN)")
        return self

    @property
    def auth_required(self) -> bool:
        """False only in dev mode without a token."""
        return bool(self.token.get_secret_value())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """Settings from ``TWINSCHED_TWIN_*`` variables; ``overrides`` (not None) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = env.get(ENV_PREFIX + name.upper())
            if raw is not None and raw != "":
                values[name] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "settings"
            message = str(first["msg"]).removeprefix("Value error, ")
            raise SettingsError(f"twin settings: {where}: {message}") from None

    def database_url(self) -> str:
        """The history database URL: ``db``, else the store's resolution ($TWINSCHED_DB...)."""
        from twinsched.store.db import resolve_url

        return resolve_url(self.db or None)


def token_problem(token: str) -> str | None:
    """Why ``token`` is unsafe, or None when it is fine."""
    if not token:
        return "is empty"
    if token.lower() in WEAK_TOKENS:
        return "is a known default"
    if len(token) < MIN_TOKEN_LENGTH:
        return f"is shorter than {MIN_TOKEN_LENGTH} characters"
    return None
