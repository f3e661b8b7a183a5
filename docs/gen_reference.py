"""MkDocs hook: the API reference pages, generated from the package tree of src/twinsched.

One page per package (``reference/twinsched/scheduling/ilp.md`` for ``twinsched.scheduling.ilp``)
holding the package's docstring and then each of its public modules, rendered by mkdocstrings
from the docstrings. The pages are not files in docs/: they are made at every build, from
:func:`public_modules`, so a new module is in the reference without anyone listing it.
A module is public when no part of its dotted name starts with ``_`` and every folder above
it is a package (has an ``__init__.py``): the Alembic revisions in ``store/migrations/versions``
are files Alembic loads by path, not modules of the package, and are left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "twinsched"
REFERENCE = "reference"


def public_modules(src: Path = SRC, package: str = PACKAGE) -> list[str]:
    """Dotted names of the public modules and packages under ``src/package``, sorted."""
    names = []
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts):
            continue
        if not all((folder / "__init__.py").is_file() for folder in _folders(path, src)):
            continue
        names.append(".".join(parts))
    return sorted(names)


def pages(modules: list[str], src: Path = SRC) -> dict[str, str]:
    """Markdown of each reference page by its path under docs/; packages get a page each."""
    packages = _packages(modules, src)
    out: dict[str, str] = {}
    for package in packages:
        lines = [f"::: {package}", "    options:", "      heading_level: 1", ""]
        lines += [f"::: {m}\n" for m in modules if m not in packages and _owner(m) == package]
        subpackages = [p for p in packages if p.rpartition(".")[0] == package]
        if subpackages:
            lines += ["## Subpackages", ""]
            here = package.rpartition(".")[2]
            lines += [f"- [`{p}`]({here}/{p.rpartition('.')[2]}.md)" for p in subpackages]
        out[_page(package)] = "\n".join(lines) + "\n"
    index = ["# API reference", "", "Generated from the docstrings of every public module.", ""]
    index += [f"- [`{p}`]({_page(p).removeprefix(REFERENCE + '/')})" for p in packages]
    out[f"{REFERENCE}/index.md"] = "\n".join(index) + "\n"
    return out


def _folders(path: Path, src: Path) -> list[Path]:
    return [folder for folder in path.parents if folder.is_relative_to(src) and folder != src]


def _packages(modules: list[str], src: Path) -> list[str]:
    return [m for m in modules if (src / m.replace(".", "/") / "__init__.py").is_file()]


def _owner(module: str) -> str:
    return module.rpartition(".")[0]


def _page(package: str) -> str:
    return f"{REFERENCE}/{package.replace('.', '/')}.md"


def nav(modules: list[str], src: Path = SRC) -> list[Any]:
    """The reference section of the navigation: the index, then one entry per package."""
    entries: list[Any] = [{"Overview": f"{REFERENCE}/index.md"}]
    entries += [{p: _page(p)} for p in _packages(modules, src)]
    return entries


def on_config(config: Any) -> Any:
    """Replace the ``API reference`` entry of the configured nav with the generated pages."""
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "API reference" in entry:
            entry["API reference"] = nav(public_modules())
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for path, text in pages(public_modules()).items():
        files.append(File.generated(config, path, content=text))
    return files
