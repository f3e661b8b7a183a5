"""``python -m twinsched.cli``: the ``twinsched`` command."""

from twinsched.cli import app

app(prog_name="twinsched")
