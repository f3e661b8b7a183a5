"""The documentation site: ``mkdocs build --strict`` of docs/ and the API reference (issue 38).

The build runs once per session into a temporary folder; every warning (a broken link or
anchor, a page left out of the navigation, a docstring mkdocstrings cannot read) fails it.
The public modules are listed here from the source tree, apart from the generator
(docs/gen_reference.py) that writes the reference pages, so the two cannot drift together.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
NOT_MODULES = "twinsched/store/migrations/versions"  # Alembic's revision files, loaded by path
SEVERE = ("serious", "critical")
NO_MOTION = "*, *::before, *::after { transition: none !important; animation: none !important; }"
EXTERNAL = re.compile(r"<(?:script|link|img)\b[^>]*(?:src|href)=\"(?:https?:)?//", re.I)


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the configuration in ``root`` into ``site``."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # no end-of-life banner
    return subprocess.run(command, cwd=root, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT, out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


def public_modules() -> set[str]:
    """Every ``.py`` under src/twinsched whose dotted name has no part starting with ``_``."""
    names = set()
    for path in (SRC / "twinsched").rglob("*.py"):
        relative = path.relative_to(SRC)
        if relative.parent.as_posix() == NOT_MODULES:
            continue
        parts = relative.with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            names.add(".".join(parts))
    return names


def test_every_public_module_is_in_the_api_reference(site: Path) -> None:
    anchors: set[str] = set()
    for page in (site / "reference").rglob("*.html"):
        anchors |= set(re.findall(r'id="(twinsched[\w.]*)"', page.read_text()))
    modules = public_modules()
    assert len(modules) > 350  # the tree was read
    assert {"twinsched", "twinsched.report.table", "twinsched.twin.api.routes"} <= modules
    assert "twinsched.traces._values" not in anchors
    assert sorted(modules - anchors) == []


def test_roles_are_links_that_land(site: Path) -> None:
    """Sphinx roles (``:func:`x```) became links to shown objects (docs/griffe_roles.py)."""
    ids: dict[Path, set[str]] = {}
    for page in (site / "reference").rglob("*.html"):
        ids[page.resolve()] = set(re.findall(r'id="([^"]+)"', page.read_text()))
    links = 0
    for page in ids:
        text = page.read_text()
        assert ":func:`" not in text and ":class:`" not in text, page
        for where, anchor in re.findall(r'class="autorefs[^"]*"[^>]*href="([^"#]*)#([^"]+)"', text):
            target = (page.parent / where / "index.html").resolve() if where else page
            assert anchor in ids.get(target, set()), f"{page}: {where}#{anchor}"
            links += 1
    assert links > 300  # 666 when written
    report = (site / "reference" / "twinsched" / "report" / "index.html").read_text()
    assert 'href="#twinsched.report.aggregate.comparison_rows"' in report


def test_only_alembic_revisions_are_outside_packages() -> None:
    """A folder without ``__init__.py`` is left out of the reference: only Alembic's is."""
    folders = {p.parent for p in (SRC / "twinsched").rglob("*.py") if "__pycache__" not in p.parts}
    outside = {f.relative_to(SRC).as_posix() for f in folders if not (f / "__init__.py").exists()}
    assert outside == {NOT_MODULES}


def test_the_site_has_every_page_search_and_no_network(site: Path) -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        name = "" if page.stem == "index" else page.stem + "/"
        assert (site / name / "index.html").is_file(), page.name
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {doc["location"] for doc in index["docs"]}
    assert "architecture/" in locations and "reference/twinsched/report/" in locations
    for page in site.rglob("*.html"):
        found = EXTERNAL.search(page.read_text())
        assert found is None, f"{page.relative_to(site)} loads {found and found[0]}"
    assert "fonts.googleapis" not in (site / "index.html").read_text()
    assert not [p for p in site.rglob("*.py*")]  # the hook and extension are not published


def test_search_and_axe_in_the_browser_offline(site: Path) -> None:
    """Material's search in Debian's Chromium answers from the local index; nothing is
    fetched from anywhere but the site; axe-core finds nothing serious or critical on a
    guide page with code and tables, a reference page and the home page, search open."""
    from playwright.sync_api import sync_playwright
    from starlette.applications import Starlette
    from starlette.staticfiles import StaticFiles

    from tests.twin.browser import axe_violations, launch, serve_in_thread

    app = Starlette()
    app.mount("/", StaticFiles(directory=site, html=True))
    bad: list[str] = []
    with serve_in_thread(app) as url, sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page()
        outside: list[str] = []
        page.on("request", lambda r: None if r.url.startswith(url) else outside.append(r.url))
        for path in ("/architecture/", "/reference/twinsched/report/", "/"):
            page.goto(f"{url}{path}")
            bad += [f"{path} {v['id']}" for v in axe_violations(page) if v["impact"] in SEVERE]
        page.click("input.md-search__input")
        page.keyboard.type("zero_note")
        page.wait_for_selector(".md-search-result__item", timeout=15_000)
        results = page.inner_text(".md-search-result")
        # the results as they end up: a loaded run once had axe read the list mid-transition
        # (color-contrast on half-transparent text)
        page.add_style_tag(content=NO_MOTION)
        bad += [f"search {v['id']}" for v in axe_violations(page) if v["impact"] in SEVERE]
        browser.close()
    assert "twinsched.report" in results
    assert outside == []
    assert bad == []


def test_the_readme_links_the_site() -> None:
    assert "](docs/index.md)" in (ROOT / "README.md").read_text()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Every guide page and the project's configuration, with one broken anchor added: the
    build fails on it, and on nothing else. The API reference is generated from a package
    of one module here (the reference's rendering, 20 s of CPU, is the ``site`` fixture's):
    no guide page links into it past its index, so the pages are the same."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "src" / "twinsched").mkdir(parents=True)
    shutil.copy(SRC / "twinsched" / "__init__.py", tmp_path / "src" / "twinsched")
    with (tmp_path / "docs" / "index.md").open("a") as page:
        page.write("\nSee [the scheduling cycle](architecture.md#no-such-heading).\n")
    done = build(tmp_path, tmp_path / "site")
    assert done.returncode != 0
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line]
    assert warnings and all("no-such-heading" in line for line in warnings), done.stderr
