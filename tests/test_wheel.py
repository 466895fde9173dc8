"""Installed, it works: the wheel carries every file the code reads.

The wheel is built from the checkout, installed into a new virtual environment
outside it, and ``dynshape list`` and one job run from a directory outside the
checkout. The new environment borrows the frameworks (torch, numpy, ...) of the
running one through a ``.pth`` line, which adds their folder to ``sys.path``
after the environment's own site-packages: the project's packages are imported
from the installed wheel, and the test checks that they are.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from harness import results

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (whl,) = out.glob("dynshape-*.whl")
    return whl


def _data_files_read_by_the_code() -> set[str]:
    """Every tracked file under the packages that is not Python source."""
    tracked = subprocess.run(
        ["git", "ls-files", "harness", "backends", "cases", "engines"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {f for f in tracked if not f.endswith(".py") and not f.endswith(".md")}


def test_the_wheel_carries_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "cases/expectations.toml" in names
    assert _data_files_read_by_the_code() <= names


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "_borrowed_frameworks.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return env


def _run(env: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(env / "bin" / "dynshape"), *args], cwd=cwd, capture_output=True, text=True, timeout=900)


def test_the_installed_wheel_lists_and_runs_a_job_outside_the_checkout(installed, tmp_path):
    where = subprocess.run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "import cases, harness, engines, backends; "
            "print('\\n'.join(m.__file__ for m in (cases, harness, engines, backends)))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(f).is_relative_to(installed) for f in where), where

    listed = _run(installed, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert "gnn_edge_divide" in listed.stdout and "torch_eager" in listed.stdout

    out = tmp_path / "out"
    run = _run(
        installed,
        tmp_path,
        "run",
        "--cases",
        "gnn_edge_divide",
        "--backends",
        "torch_eager",
        "--modes",
        "static",
        "--out",
        str(out),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (records,) = out.glob("*.jsonl")
    statuses = {r["status"] for r in results.read_records(records)}
    assert statuses == {"pass"}, statuses
