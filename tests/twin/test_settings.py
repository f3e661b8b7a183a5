"""Settings refuse unsafe tokens unless dev mode; environment variables fill them."""

from __future__ import annotations

import pytest

from twinsched.twin.core.settings import SettingsError, TwinSettings, token_problem

GOOD = "a-long-enough-token-42"


@pytest.mark.parametrize(
    ("token", "words"),
    [("", "empty"), ("changeme", "known default"), ("secret", "known default"),
     ("short-token", "shorter than 16")],
)  # fmt: skip
def test_unsafe_tokens_are_refused_unless_dev(token: str, words: str) -> None:
    with pytest.raises(SettingsError, match=f"token: .*{words}"):
        TwinSettings.from_env({}, token=token)
    assert TwinSettings.from_env({}, token=token, dev=True).auth_required == bool(token)


def test_environment_and_overrides() -> None:
    env = {"TWINSCHED_TWIN_TOKEN": GOOD, "TWINSCHED_TWIN_MAX_BODY_BYTES": "1024",
           "TWINSCHED_TWIN_RETENTION_S": "3600", "TWINSCHED_TWIN_DB": "/tmp/x.db"}  # fmt: skip
    settings = TwinSettings.from_env(env, max_body_bytes=None)
    assert settings.token.get_secret_value() == GOOD
    assert (settings.max_body_bytes, settings.retention_s) == (1024, 3600.0)
    assert settings.database_url() == "sqlite:////tmp/x.db"
    assert GOOD not in repr(settings)  # the token is a secret
    assert TwinSettings.from_env(env, db="postgresql://u@h/d").database_url() == (
        "postgresql+psycopg://u@h/d"
    )
    with pytest.raises(SettingsError, match="max_body_bytes"):
        TwinSettings.from_env({**env, "TWINSCHED_TWIN_MAX_BODY_BYTES": "lots"})


def test_default_database_is_the_store_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWINSCHED_DB", "/tmp/store.db")
    assert TwinSettings.from_env({}, token=GOOD).database_url() == "sqlite:////tmp/store.db"


def test_token_problem_accepts_a_strong_token() -> None:
    assert token_problem(GOOD) is None
