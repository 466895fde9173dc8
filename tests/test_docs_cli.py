"""The docs name every command-line option and every make target: a test, so that an
option added to ``harness/cli.py`` (or a Makefile target) without its line in the docs
fails here, and so does a docs line left for one that is gone."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness import cli

ROOT = Path(__file__).resolve().parent.parent
USING = ROOT / "docs" / "using.md"
CONTRIBUTING = ROOT / "docs" / "contributing.md"


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """``(command path, its parser)`` for every (sub)command, nested ones too (``packs install``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def options() -> list[tuple[str, str]]:
    """``(command, --option)`` for every long option of every command."""
    return [
        (" ".join(path), opt)
        for path, sub in commands(cli.parser())
        for a in sub._actions
        for opt in a.option_strings
        if opt.startswith("--") and opt != "--help"
    ]


def make_targets() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M)
    assert phony, "Makefile: no .PHONY line"
    return phony.group(1).split()


def undocumented_options(docs: str) -> list[str]:
    return [f"{c} {o}" for c, o in options() if not re.search(re.escape(o) + r"(?![\w-])", docs)]


def test_every_command_is_in_the_docs():
    docs = USING.read_text()
    named = [" ".join(p) for p, _ in commands(cli.parser())]
    missing = [c for c in named if not re.search(r"(harness|dynshape) " + re.escape(c) + r"\b", docs)]
    assert missing == [], f"docs/using.md names no `harness <command>` for: {missing}"


def test_every_option_is_in_the_docs():
    assert options(), "no options found: the parser walk is broken"
    assert undocumented_options(USING.read_text()) == [], "docs/using.md does not name these options"


def test_an_option_dropped_from_the_docs_is_found():
    """The check itself: take one option's every mention out of the page, and it is named."""
    command, opt = options()[0]
    docs = re.sub(re.escape(opt) + r"(?![\w-])", "", USING.read_text())
    assert f"{command} {opt}" in undocumented_options(docs)


@pytest.mark.parametrize("target", make_targets())
def test_every_make_target_is_in_the_contributing_page(target):
    assert re.search(rf"make {re.escape(target)}(?![\w-])", CONTRIBUTING.read_text()), (
        f"docs/contributing.md does not mention `make {target}`"
    )
