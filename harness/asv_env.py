"""asv's environment matrix over releases of the systems under test.

An asv plugin (``asv.conf.json``: ``"plugins": [".harness.asv_env"]``,
``"environment_type": "dynshape"``) whose environment type maps a matrix
entry such as ``{"torch": "2.9.1", "jax": "0.10.2"}`` onto the project's
per-release environments (:data:`backends.envs.ENVS`, created by the
project's make targets) instead of installing each release from a registry:

- the benchmarks run in the checkout's own interpreter (the main ``.venv``:
  the harness, asv_runner, pandas), with the benchmarked commit's source tree
  (asv's checkout in the environment's ``project/``) first on ``PYTHONPATH``, so
  ``asv run A..B`` tracks commits with no wheel and no virtualenv built;
- each benchmark process gets ``DYNSHAPE_ASV_VERSIONS`` (``torch=2.9.1
  jax=0.10.2``, ``harness run --versions``'s spelling), and ``benchmarks/suite.py``
  runs each job of a torch or jax backend in a worker of that release's
  environment (:func:`harness.releases.with_versions`), as ``harness run --versions``
  does; the interpreters of the release environments are passed on by their
  override variables (``DYNSHAPE_XLA_PYTHON``…), since the commit's checkout has
  no ``.venv-*`` of its own;
- asv keys its results by the entry (``<commit>-dynshape-py3.11-jax0.10.2-torch2.9.1.json``,
  ``params`` ``{"torch": "2.9.1", "jax": "0.10.2"}``), so ``asv publish`` graphs each
  benchmark per release as well as per commit.

A matrix entry naming a system or a release that ``backends/envs.py`` does not
declare stops asv with one line naming it (exit 2). Creating an environment
runs the make target of each release environment that is missing (``make
xla-env``, ``make versions-env``).
"""

from __future__ import annotations

import os
import subprocess
import sys

from asv import environment, util  # type: ignore[import-untyped]
from asv.console import log  # type: ignore[import-untyped]

from backends import envs

#: the variable that carries a matrix entry's releases to the benchmark processes
VARIABLE = "DYNSHAPE_ASV_VERSIONS"


class MatrixError(SystemExit):
    """A matrix entry names what backends/envs.py does not declare: one line, exit 2
    (a ``SystemExit``: asv lets it through, where it would log and skip an
    ``EnvironmentUnavailable``)."""

    def __init__(self, message: str):
        print(f"asv.conf.json matrix: {message}", file=sys.stderr)
        super().__init__(2)


def releases(requirements: dict[str, str]) -> dict[str, str]:
    """``{system: release environment}`` of a matrix entry (``{"torch": "2.9.1"}``);
    :class:`MatrixError` for a system or a release without an environment."""
    out = {}
    for system, version in sorted(requirements.items()):
        if system not in envs.SYSTEMS:
            raise MatrixError(f"{system!r} is not a system with releases; valid: {', '.join(envs.SYSTEMS)}")
        try:
            out[system] = envs.version_env(system, str(version))
        except envs.EnvError:
            raise MatrixError(
                f"no environment for {system} {version}; backends/envs.py declares {', '.join(envs.versions_of(system))}"
            ) from None
    return out


def spec(requirements: dict[str, str]) -> str:
    """The entry as ``harness run --versions`` spells it: ``jax=0.10.2 torch=2.9.1``."""
    return " ".join(f"{s}={envs.ENVS[e]['version']}" for s, e in releases(requirements).items())


def parse(value: str) -> dict[str, list[str]]:
    """:data:`VARIABLE`'s value as :func:`backends.envs.parse_versions` gives it
    (``{system: [release environment]}``); ``{}`` when unset or empty."""
    return envs.parse_versions(value.split()) if value.strip() else {}


def interpreters(requirements: dict[str, str]) -> dict[str, str]:
    """The override variables (``DYNSHAPE_XLA_PYTHON``…) naming, as this checkout
    resolves them, the interpreter of every environment a worker may need: the
    entry's releases and the other environments with an interpreter of their own
    (torch_xla's). :class:`backends.envs.EnvError` if a release's is missing."""
    out = {}
    needed = set(releases(requirements).values())
    for name, entry in envs.ENVS.items():
        if entry["python"] is None or "override" not in entry:
            continue
        try:
            out[entry["override"]] = envs.python_for(name)
        except envs.EnvError:
            if name in needed:
                raise
    return out


class Releases(environment.Environment):
    """asv environment type ``dynshape``: see the module docstring."""

    tool_name = "dynshape"
    matches_python_fallback = False

    def __init__(self, conf, python, requirements, tagged_env_vars):
        self._releases = releases(requirements)  # MatrixError before anything else
        self._executable = sys.executable
        self._python = python
        self._requirements = requirements
        super().__init__(conf, python, requirements, tagged_env_vars)

    @classmethod
    def matches(cls, python):
        """Only the interpreter asv itself runs in (the checkout's ``.venv``)."""
        return python in ("same", f"{sys.version_info[0]}.{sys.version_info[1]}")

    @property
    def releases(self) -> dict[str, str]:
        """``{system: release environment}`` of this entry."""
        return dict(self._releases)

    def process_vars(self) -> dict[str, str]:
        """What every benchmark process (discover, setup_cache, each sample) is
        given beyond asv's: :data:`VARIABLE` and the interpreters' overrides. Not
        in ``env_vars``, which asv writes into each result file (and ``asv
        publish`` would offer this machine's paths as a parameter)."""
        out = {VARIABLE: spec(self._requirements)}
        try:
            out.update(interpreters(self._requirements))
        except envs.EnvError:
            pass  # create() makes them; check_presence() says so
        return out

    def missing(self) -> list[str]:
        """Why this entry's release environments cannot run yet (one line each)."""
        why = []
        for env in self._releases.values():
            try:
                envs.python_for(env)
            except envs.EnvError as e:
                why.append(str(e))
                continue
            bad = envs.version_mismatch(env)
            if bad:
                why.append(bad)
        return why

    def check_presence(self):
        if not os.path.isdir(self._path) or self.missing():
            return False
        try:
            info = self.load_info_file(self._path)
        except (util.UserError, OSError):
            return False
        return info == {
            "tool_name": self.tool_name,
            "python": self._python,
            "requirements": self._requirements,
            "build_env_vars": self.build_env_vars,
        }

    def _setup(self):
        """Create the release environments that are missing with the project's
        make targets (run in the checkout asv was started from), then this
        entry's directory (asv's checkout of each commit goes in it)."""
        for env in self._releases.values():
            if not envs.ENVS[env].get("create") or (_exists(env) and not envs.version_mismatch(env)):
                continue
            command = envs.create_command(env)
            log.info(f"Creating {env} for {self.name}: {command}")
            done = subprocess.run(command.split(), cwd=envs.ROOT)
            if done.returncode:
                raise util.UserError(f"{self.name}: `{command}` failed (exit {done.returncode})")
        why = self.missing()
        if why:
            raise util.UserError(f"{self.name}: " + "; ".join(why))
        os.makedirs(self._path, exist_ok=True)

    def install_project(self, conf, repo, commit_hash):
        """Check out ``commit_hash`` into the environment's ``project/``: the
        benchmarks import it from there (``PYTHONPATH``); nothing is built, the
        third-party packages are the main environment's."""
        if self._get_installed_commit_hash() == commit_hash:
            self._set_commit_hash(commit_hash)
            return
        self._set_installed_commit_hash(None)
        log.info(f"Checking out {repo.get_decorated_hash(commit_hash, 8)} for {self.name}")
        self.checkout_project(repo, commit_hash)
        self._set_installed_commit_hash(commit_hash)

    def find_executable(self, executable):
        if executable == "python":
            return self._executable
        return util.which(executable, [os.path.dirname(self._executable)])

    def run(self, args, **kwargs):
        log.debug(f"Running '{' '.join(args)}' in {self.name}")
        env = dict(kwargs.pop("env", None) or os.environ)
        env.update(self._global_env_vars)
        env.update(self.process_vars())
        # the commit's tree before the main environment's editable install of this checkout
        env.pop("PYTHONPATH", None)
        if os.path.isdir(self._build_root):
            env["PYTHONPATH"] = self._build_root
        return util.check_output([self._executable, *args], env=env, **kwargs)

    def run_executable(self, executable, args, **kwargs):
        return util.check_output([self.find_executable(executable), *args], **kwargs)


def _exists(env: str) -> bool:
    try:
        envs.python_for(env)
        return True
    except envs.EnvError:
        return False
