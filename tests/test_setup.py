"""Set-up against flaky registries: mk/retry and the xla env's download-then-install."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RETRY = ROOT / "mk" / "retry"


def _retry(tmp_path, tries, fail_first):
    """Run mk/retry on a command that fails its first ``fail_first`` runs."""
    count = tmp_path / "count"
    count.write_text("0")
    cmd = f"n=$(($(cat {count}) + 1)); echo $n > {count}; [ $n -gt {fail_first} ] || exit 7"
    out = subprocess.run(
        [str(RETRY), str(tries), "lbl", "bash", "-c", cmd],
        capture_output=True,
        text=True,
        env={**os.environ, "RETRY_WAIT": "0"},
        timeout=60,
    )
    return out, int(count.read_text())


def test_retry_runs_again_until_the_command_succeeds(tmp_path):
    out, runs = _retry(tmp_path, tries=5, fail_first=2)
    assert out.returncode == 0 and runs == 3
    assert out.stderr.count("lbl: try") == 2 and "try 2 of 5 failed (exit 7)" in out.stderr


def test_retry_gives_up_after_its_tries_with_the_last_status(tmp_path):
    out, runs = _retry(tmp_path, tries=3, fail_first=10)
    assert out.returncode == 7 and runs == 3
    assert "lbl: all 3 tries failed (last exit 7)" in out.stderr


def test_retry_runs_a_succeeding_command_once(tmp_path):
    out, runs = _retry(tmp_path, tries=3, fail_first=0)
    assert out.returncode == 0 and runs == 1 and out.stderr == ""


def test_xla_env_downloads_with_retries_then_installs_offline(tmp_path):
    """The wheels are fetched by mk/retry into a folder that survives a failed try, and the
    install reads only that folder (a cut download costs one file, not the set)."""
    venv = tmp_path / "xv"
    out = subprocess.run(
        ["make", "-n", "xla-env", f"XLA_VENV={venv}", "XLA_TRIES=4"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    script = out.stdout
    wheels = f"{venv}/.wheels"
    download = script.index(f"mk/retry 4 xla-env {venv}/bin/python -m pip download")
    install = script.index(f"-m pip install --no-index --find-links {wheels}")
    assert download < install < script.index(f"rm -rf {wheels}") < script.index(f"touch {venv}/.installed")
    assert f"-d {wheels} -r requirements-xla.txt" in script
