"""What a documented command says it writes, and the files a page reads that its commands
wrote under another name (``tests/docs/test_run_commands.py``, ``bench/docs_long.py``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import PurePosixPath

WRITES = ("--out", "--anomaly-labels")  # options naming what a command writes
_FILE = re.compile(r"^[\w./-]+\.[a-z]{2,8}$")  # a token that names a file with a suffix


def tokens(command: str) -> list[str]:
    """The command's words (its first line; a here-document's body is not arguments)."""
    try:
        return shlex.split(command.splitlines()[0], comments=True)
    except ValueError:  # an unbalanced quote in a shell snippet: words by spaces
        return command.splitlines()[0].split()


def written(command: str) -> list[str]:
    """The paths the command says it writes: each ``--out``-like option's value and each
    ``> FILE`` redirection (``/dev/null`` aside)."""
    words = tokens(command)
    out = []
    for i, word in enumerate(words[:-1]):
        if word in WRITES or word == ">":
            out.append(words[i + 1])
        elif word.startswith(">") and len(word) > 1:
            out.append(word[1:])
    return [p for p in out if p != "/dev/null" and "$" not in p]


def misnamed_reads(commands: Iterable[str]) -> list[str]:
    """Files a command reads that an earlier command of the same page wrote under another
    suffix (``requests.csv`` written, ``requests.parquet`` read): one line per such read."""
    wrote: dict[str, str] = {}  # stem -> the name written
    problems = []
    for command in commands:
        for word in tokens(command):
            if not _FILE.match(word):
                continue
            path = PurePosixPath(word)
            stem = str(path.with_suffix(""))
            if stem in wrote and wrote[stem] != word and word not in written(command):
                problems.append(f"{command!r} reads {word}, the page wrote {wrote[stem]}")
        for path_text in written(command):
            wrote[str(PurePosixPath(path_text).with_suffix(""))] = path_text
    return problems
