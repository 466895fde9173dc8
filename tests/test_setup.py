"""Set-up against flaky registries: mk/retry and the xla env's download-then-install."""

import os
import subprocess
import sys
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


UV = ROOT / "mk" / "uv"


def _fake_uv(tmp_path) -> Path:
    """A stand-in for uv that prints the settings mk/uv hands it, and its arguments."""
    fake = tmp_path / "uv"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'for k in UV_FIND_LINKS UV_EXTRA_INDEX_URL UV_INDEX_URL UV_CONSTRAINT SSL_CERT_FILE UV_INDEX_STRATEGY; do echo "$k=${!k-}"; done\n'
        'echo "ARGS=$*"\n'
    )
    fake.chmod(0o755)
    return fake


def _settings(out: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in out.splitlines())


def _clean_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "SSL_CERT"))}
    return {**env, "UV_PIP_PYTHON": sys.executable, **extra}


def test_uv_gets_the_sources_pip_has_from_its_variables(tmp_path):
    """uv reads none of pip's settings: mk/uv hands it pip's find-links (comma-separated,
    as uv reads them), extra indexes, constraints and CA bundle, and pip's best match
    across indexes (uv's default takes the first index that has the package)."""
    env = _clean_env(
        PIP_FIND_LINKS="/w1 /w2",
        PIP_EXTRA_INDEX_URL="file:///a/simple file:///b/simple",
        PIP_CONSTRAINT="/c.txt",
        PIP_CERT="/ca.pem",
        PIP_CONFIG_FILE=os.devnull,
    )
    out = subprocess.run(
        [str(UV), str(_fake_uv(tmp_path)), "pip", "install", "x"], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    got = _settings(out.stdout)
    assert got["UV_FIND_LINKS"] == "/w1,/w2"
    assert got["UV_EXTRA_INDEX_URL"] == "file:///a/simple file:///b/simple"
    assert got["UV_CONSTRAINT"] == "/c.txt" and got["SSL_CERT_FILE"] == "/ca.pem"
    assert got["UV_INDEX_STRATEGY"] == "unsafe-best-match" and got["ARGS"] == "pip install x"


def test_uv_gets_the_sources_pip_has_from_its_config_file(tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nfind-links = /wheels\nextra-index-url = file:///x/simple\nconstraint = /k.txt\n")
    env = _clean_env(PIP_CONFIG_FILE=str(conf))
    out = subprocess.run([str(UV), str(_fake_uv(tmp_path))], capture_output=True, text=True, env=env, timeout=60)
    got = _settings(out.stdout)
    # (pip also reads the machine's own files: only the keys set here are certain)
    assert (got["UV_FIND_LINKS"], got["UV_EXTRA_INDEX_URL"], got["UV_CONSTRAINT"]) == ("/wheels", "file:///x/simple", "/k.txt")


def test_setup_installs_with_uv_and_falls_back_to_pip():
    """`make setup` (also under `make run`/`make test`) installs the main venv with uv through
    mk/uv, and with pip where uv could not be installed; so does xla-env. Neither
    compiles every file at install (~75 s): imports write what is used
    (test_make_lets_imports_write_their_bytecode)."""
    out = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", ".venv/.installed"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    script = out.stdout
    assert (
        "mk/uv .venv/bin/uv pip install --quiet --python .venv/bin/python -e '.[main,models,test,bench,distributed,docs,peers]'"
        in script
    )
    assert script.index("-m pip install --quiet 'uv==") < script.index("mk/uv .venv/bin/uv")
    assert (
        ".venv/bin/python -m pip install --quiet -e '.[main,models,test,bench,distributed,docs,peers]'" in script
    )  # the fallback
    xla = subprocess.run(["make", "-n", "xla-env", "XLA_VENV=/tmp/xv-n"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "mk/uv .venv/bin/uv pip install --quiet --python /tmp/xv-n/bin/python  -r requirements-xla.txt" in xla.stdout


def _pins(lines) -> dict[str, str]:
    """``name==version`` requirement lines, by normalised name (comments skipped)."""
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip().strip('",')
        if "==" in line:
            name, version = line.split("==", 1)
            out[name.strip().lower().replace("-", "_")] = version.strip()
    return out


def test_the_xla_env_pins_every_model_library():
    """The torch_xla peers run the model cases only where .venv-xla has their libraries
    (cases.libs.LIBRARIES): each is pinned exactly in requirements-xla.txt, the
    pure-Python ones at the main env's version (pyproject's `models` extra);
    torchvision is tied to torch, so it follows the xla env's torch instead."""
    from cases import libs

    xla = _pins((ROOT / "requirements-xla.txt").read_text().splitlines())
    main = _pins(libs.LIBRARIES.values())
    assert set(libs.LIBRARIES) <= set(xla), f"requirements-xla.txt lacks {sorted(set(libs.LIBRARIES) - set(xla))}"
    for name in ("transformers", "torch_geometric"):
        assert xla[name] == main[name], (name, xla[name], main[name])
    # torchvision 0.24 is the release for torch 2.9 (0.(x + 15) for torch 2.x)
    torch_minor = int(xla["torch"].split(".")[1])
    assert xla["torchvision"].startswith(f"0.{torch_minor + 15}."), (xla["torch"], xla["torchvision"])
    # pyproject's models extra and cases.libs name the same main-env pins
    extra = (ROOT / "pyproject.toml").read_text().split("models = [", 1)[1].split("]", 1)[0]
    assert _pins(extra.splitlines()) == main


def test_make_lets_imports_write_their_bytecode(tmp_path):
    """Where PYTHONDONTWRITEBYTECODE=1 (this machine) no import writes a .pyc, and
    every interpreter make's commands start (hundreds in make test) would compile
    torch and jax from source: the Makefile unexports it for its recipes. Seen
    through `make run` with a stand-in interpreter that reports what it was given."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\necho "dwb=${PYTHONDONTWRITEBYTECODE-unset} args=$*"\n')
    fake.chmod(0o755)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run(
        ["make", "-s", "-o", ".venv/.installed", "-o", ".venv-xla/.installed", "run", f"PY={fake}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "dwb=unset args=-m harness run --quick --jobs 2" in out.stdout, out.stdout
