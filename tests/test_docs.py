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


def test_every_findings_page_is_in_the_findings_index():
    """The index is the findings' front page: a dated page it does not list is lost to readers."""
    index = (ROOT / "docs" / "findings" / "index.md").read_text()
    pages = sorted(p.name for p in (ROOT / "docs" / "findings").glob("*.md") if p.name != "index.md")
    assert pages and [p for p in pages if f"({p})" not in index] == []


def test_the_readme_names_every_backend():
    """The front page's list of systems is the registry's: a new backend without its line fails here."""
    from harness import registry

    readme = (ROOT / "README.md").read_text()
    assert [n for n in registry.backends() if f"`{n}`" not in readme] == []


def test_the_generated_blocks_of_the_docs_are_up_to_date():
    """Counts and example tables the docs quote are made by harness.docs_sync: a change to the
    catalogue, the registry, the report's columns or the recorded example run shows here."""
    from harness import docs_sync

    assert docs_sync.drift() == [], "run `python -m harness.docs_sync` and commit the docs"
