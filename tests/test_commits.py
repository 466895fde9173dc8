"""Commit subjects stay at most 72 characters (docs/contributing.md), for every commit
after :data:`BASE` (the older ones are kept as they are: history is not rewritten).
``mk/hooks/commit-msg`` holds a new commit to the same rule before it is made."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: main when the rule got its test (314 of its 510 subjects are longer)
BASE = "d5091483f642ab7de1eb4eb719ebc15309c4b754"
LIMIT = 72
HOOK = ROOT / "mk" / "hooks" / "commit-msg"


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def _subjects() -> list[tuple[str, str]]:
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode:
        pytest.skip("not a git checkout")
    if _git("cat-file", "-e", f"{BASE}^{{commit}}").returncode:
        pytest.skip(f"the base commit {BASE[:12]} is not in this clone (shallow?)")
    log = _git("log", "--format=%h %s", f"{BASE}..HEAD")
    assert log.returncode == 0, log.stderr
    return [tuple(line.split(" ", 1)) for line in log.stdout.splitlines()]  # type: ignore[misc]


def too_long(subjects) -> list[str]:
    return [f"{h} ({len(s)} chars): {s}" for h, s in subjects if len(s) > LIMIT]


def test_commit_subjects_after_the_base_are_at_most_72_characters():
    assert too_long(_subjects()) == []


def test_the_check_names_a_long_subject():
    assert too_long([("abc1234", "x" * 73), ("def5678", "y" * 72)]) == [f"abc1234 (73 chars): {'x' * 73}"]


@pytest.mark.parametrize("subject, code", [("Fix the report's legend", 0), ("x" * 73, 1)])
def test_the_commit_msg_hook_refuses_a_long_subject(tmp_path, subject, code):
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text(f"# a comment git strips\n{subject}\n\nA body line that may be as long as it likes, {'z' * 80}\n")
    got = subprocess.run(["sh", str(HOOK), str(msg)], capture_output=True, text=True)
    assert got.returncode == code, got.stderr
    assert (str(LIMIT) in got.stderr) == bool(code)
