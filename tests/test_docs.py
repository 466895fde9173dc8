"""The README stays a front page; the docs site holds the rest."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_is_at_most_150_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: move detail to docs/"


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert pages and [p for p in pages if p not in nav] == []
