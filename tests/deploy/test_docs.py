"""The documentation as an operator meets it: the site builds with `mkdocs build --strict`
(no broken link or anchor, no page left out of the nav), the same pages read on GitHub
through the docs index, and nothing points at files a user of karpy cannot see."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from karpy.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIG = DOCS / "mkdocs" / "mkdocs.yml"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "mkdocs" not in p.relative_to(DOCS).parts)

needs_mkdocs = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="mkdocs-material not installed (pip install -e '.[dev]')",
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


@pytest.mark.slow
@needs_mkdocs
def test_site_builds_strict_without_warnings(tmp_path):
    result = build(CONFIG, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "install" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "settings" / "index.html").exists()


@pytest.mark.slow
@needs_mkdocs
@pytest.mark.parametrize(
    "target", ["no-such-page.md", "upgrade.md#no-such-heading"], ids=["page", "anchor"]
)
def test_a_broken_link_fails_the_build(tmp_path, target):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    with (docs / "install.md").open("a") as text:
        text.write(f"\nSee [this]({target}).\n")
    result = build(docs / "mkdocs" / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert re.search(r"WARNING .*'install.md' contains a link '" + re.escape(target), result.stderr)


@pytest.mark.slow
@needs_mkdocs
def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    (docs / "orphan.md").write_text("# Orphan\n")
    result = build(docs / "mkdocs" / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert re.search(r'WARNING .*not included in the "nav".*\n\s+- orphan\.md', result.stderr)


def test_docs_index_links_every_page():
    # GitHub readers have no nav: docs/README.md is their table of contents.
    index = (DOCS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([^)#]+\.md)", index))
    pages = {str(p.relative_to(DOCS)) for p in PAGES} - {"README.md"}
    assert pages - linked == set()


def test_task_pages_come_first_in_the_docs_index():
    index = (DOCS / "README.md").read_text()
    first = index.index("](install.md)")
    for design_page in ("scheduling.md", "runtime.md", "controllers.md"):
        assert first < index.index(f"]({design_page})")


@pytest.mark.parametrize(
    "pattern",
    [r"\bshared/", r"closing note", r"\b[Ii]ssue \d+", r"\bthe [\w-]+ issue\b"],
)
def test_docs_name_nothing_a_user_cannot_see(pattern):
    offending = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in [ROOT / "README.md", *PAGES]
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]
    assert offending == []


def test_readme_lists_every_cli_command():
    readme = (ROOT / "README.md").read_text()
    (cli_row,) = [line for line in readme.splitlines() if line.startswith("| `karpy/cli.py`")]
    for command in COMMANDS:
        assert f"`{command}`" in cli_row, command
