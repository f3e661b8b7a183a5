"""What every refused command line must look like: a non-zero exit, the expected words, no
traceback."""

from __future__ import annotations

from click.testing import Result


def assert_clear_refusal(result: Result, words: list[str]) -> None:
    """``result`` failed with one clear message that holds every word of ``words``."""
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for word in words:
        assert word in result.output, result.output
