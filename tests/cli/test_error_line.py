"""An error line prints the exception's text as it is: square brackets are not rich markup."""

from __future__ import annotations

import pytest

from twinsched.cli.console import error_exit
from twinsched.errors import MissingExtraError
from twinsched.extras import install_hint


def test_the_missing_extra_hint_keeps_its_extra(capsys: pytest.CaptureFixture[str]) -> None:
    error_exit(MissingExtraError(install_hint("the scenario store needs SQLAlchemy", "store")))
    assert "pip install 'twinsched[store]'" in capsys.readouterr().err


def test_brackets_in_a_file_name_are_printed(capsys: pytest.CaptureFixture[str]) -> None:
    error_exit(OSError("cannot read runs/[bold]x.csv"))
    assert "runs/[bold]x.csv" in capsys.readouterr().err
