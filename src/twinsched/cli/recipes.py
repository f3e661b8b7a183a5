"""Options of the commands that read recipe files (``twinsched train``, ``twinsched distil``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from twinsched.training.recipe_check import MAX_FILE_BYTES

RecipeOpt = Annotated[
    Path | None,
    typer.Option(
        "--recipe",
        help="Recipe file; default: the default recipe (--print-recipe shows it) "
        f"[TOML file of at most {MAX_FILE_BYTES // 1024} KiB; keys and ranges: docs/ai.md, "
        "Recipe files]",
        exists=True,
        dir_okay=False,
        metavar="FILE",
    ),
]
PrintRecipeOpt = Annotated[
    bool,
    typer.Option(
        "--print-recipe", help="Write the effective recipe as TOML to stdout; train nothing."
    ),
]
RegisterOpt = Annotated[
    str | None, typer.Option(help="Register the result as model NAME (ai:NAME).")
]
