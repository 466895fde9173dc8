"""A job's content hash: what its records depend on, for incremental runs.

A job's records are a function of its case's definition, its backend's code
and the engine packages that code imports, the harness code that measures
(worker, measure, oracle), the versions of the systems in the job's
environment, the run's settings and the machine. :meth:`Fingerprints.job`
hashes all of them into one hex string, written into every record
(``fingerprint``); :mod:`harness.incremental` takes a job from an earlier run
when its fingerprint is unchanged.

Dependencies are found by reading ``import`` statements (every one in a file,
inside functions too: backends import their engine lazily), never by
importing. Within ``engines/`` the unit is the package: an import of anything
in ``engines.lazy`` hashes every file of ``engines/lazy/`` (its op modules
register themselves, an import graph would miss them), and the imports of
those files are followed in turn. ``backends`` and ``cases`` are followed
module by module, except their package ``__init__``, which aggregates every
module of the package (following it would make each backend depend on all
the others).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from backends import envs

#: top-level packages of this repository whose imports are followed
TRACKED = ("backends", "engines", "cases")
#: packages whose ``__init__`` is hashed but not followed (it imports every module of the package)
AGGREGATES = ("backends", "cases")
#: the harness files that decide what a record says, whichever the backend
HARNESS_FILES = ("harness/worker.py", "harness/measure.py", "harness/oracle.py")
#: files every case is built on, whichever module defines it
CASE_FILES = ("cases/model.py", "cases/__init__.py")
#: the run settings a record depends on (``harness.runner.Runner`` attributes)
SETTINGS = ("profile", "repeats", "warmup", "timeout_s", "threads", "max_memory", "warm_cache", "processes")
#: characters of the sha256 hex digest kept in a record
LENGTH = 20
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


class Fingerprints:
    """Content hashes of cases, backends and jobs under ``root``, each file
    read once per instance (a run holds one; a new instance sees edits)."""

    def __init__(self, root: Path = envs.ROOT):
        self.root = Path(root).resolve()
        self._digest: dict[Path, str] = {}
        self._imports: dict[Path, set[Path]] = {}
        self._modules: dict[str, frozenset[Path]] = {}
        self._backends: dict[str, str] = {}
        self._cases: dict[str, str] = {}

    # -- files and their imports ------------------------------------------

    def file_digest(self, path: Path) -> str:
        if path not in self._digest:
            try:
                self._digest[path] = _sha(path.read_bytes())
            except OSError:
                self._digest[path] = "missing"
        return self._digest[path]

    def closure(self, start: Iterable[Path]) -> list[Path]:
        """``start`` and every tracked file they import, transitively, sorted."""
        seen: set[Path] = set()
        todo = [Path(p).resolve() for p in start]
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            todo.extend(self._imports_of(p) - seen)
        return sorted(seen)

    def _imports_of(self, path: Path) -> set[Path]:
        if path not in self._imports:
            self._imports[path] = set() if self._aggregate(path) else self._scan(path)
        return self._imports[path]

    def _aggregate(self, path: Path) -> bool:
        return path.name == "__init__.py" and path.parent.parent == self.root and path.parent.name in AGGREGATES

    def _scan(self, path: Path) -> set[Path]:
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            return set()  # the file's digest still says what it holds
        package = self._module_of(path)
        names: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level and package is not None:
                    parts = package.split(".")
                    # a module's own package is its name less the last part; an __init__'s is its name
                    up = parts[: len(parts) - node.level + (1 if path.name == "__init__.py" else 0)]
                    base = ".".join([*up, *([base] if base else [])])
                names.append(base)
                names.extend(f"{base}.{a.name}" for a in node.names)
        out: set[Path] = set()
        for name in names:
            out.update(self._files_of(name))
        return out

    def _module_of(self, path: Path) -> str | None:
        try:
            rel = path.relative_to(self.root).with_suffix("")
        except ValueError:
            return None
        parts = list(rel.parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def _files_of(self, module: str) -> frozenset[Path]:
        """The files of ``module`` if it is tracked: a whole ``engines.X``
        package, or one module of ``backends``/``cases``. Kept per name: every
        module of an engine imports its siblings, and each name of them is the
        whole package (a walk of its tree and a ``resolve`` per file)."""
        parts = module.split(".")
        key = ".".join(parts[:2]) if parts[0] == "engines" else module  # (an engine is one unit)
        if key not in self._modules:
            self._modules[key] = frozenset(self._find_files_of(key))
        return self._modules[key]

    def _find_files_of(self, module: str) -> set[Path]:
        parts = module.split(".")
        if not parts or parts[0] not in TRACKED:
            return set()
        if parts[0] == "engines" and len(parts) > 1:
            pkg = self.root / "engines" / parts[1]
            if pkg.is_dir():
                return {p.resolve() for p in pkg.rglob("*.py")}
        base = self.root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return {candidate.resolve()}
        return set()

    def files_digest(self, files: Iterable[Path]) -> str:
        """One digest of ``files``' contents and paths (relative to the root where under it)."""

        def rel(p: Path) -> str:
            try:
                return str(p.relative_to(self.root))
            except ValueError:
                return str(p)

        return _sha("\n".join(f"{rel(p)} {self.file_digest(p)}" for p in sorted(files)))

    # -- what a job depends on --------------------------------------------

    def backend_files(self, backend) -> list[Path]:
        """The backend's module, the modules of its classes' bases, and what they import."""
        start = {_source_file(cls) for cls in type(backend).__mro__ if cls is not object}
        return self.closure(p for p in start if p is not None)

    def backend(self, backend) -> str:
        """Digest of ``backend``'s code: :meth:`backend_files`."""
        if backend.name not in self._backends:
            self._backends[backend.name] = self.files_digest(self.backend_files(backend))
        return self._backends[backend.name]

    def case_files(self, case) -> list[Path]:
        """The module defining ``case`` (its family's, and those of its callables) and what they import."""
        start = {self.root / p for p in CASE_FILES}
        family = _family_file(case.name)
        if family is not None:
            start.add(family)
        for field in dataclasses.fields(case):
            value = getattr(case, field.name)
            if callable(value):
                start.update(_callable_files(value))
        return self.closure(start)

    def case(self, case) -> str:
        """Digest of ``case``: its files, its data fields, and its zoo entry if it has one."""
        if case.name not in self._cases:
            self._cases[case.name] = self._case(case)
        return self._cases[case.name]

    def _case(self, case) -> str:
        data = {
            f.name: _ADDRESS.sub("", repr(getattr(case, f.name)))
            for f in dataclasses.fields(case)
            if not callable(getattr(case, f.name))
        }
        data["__class__"] = f"{type(case).__module__}.{type(case).__qualname__}"
        return _sha(json.dumps([self.files_digest(self.case_files(case)), data, _zoo_entry(case.name)], sort_keys=True))

    def harness(self) -> str:
        return self.files_digest(self.root / p for p in HARNESS_FILES)

    def job(self, combo, settings: dict, machine: dict) -> str:
        """The fingerprint of ``combo`` run with ``settings`` (:data:`SETTINGS`) on ``machine``."""
        parts = {
            # the names too: two backends of one module (a variant class) are two jobs
            "job": [combo.case.name, combo.backend.name],
            "case": self.case(combo.case),
            "backend": self.backend(combo.backend),
            "harness": self.harness(),
            "mode": combo.mode,
            "env": combo.env_name,
            "versions": {e: env_versions(e) for e in (combo.env_name, *combo.backend.helper_envs)},
            "settings": {k: settings.get(k) for k in SETTINGS},
            "left_out": combo.left_out,
            "named": combo.named,
            "machine": {k: machine.get(k) for k in ("host", "cpu", "cores")},
        }
        return _sha(json.dumps(parts, sort_keys=True, default=str))[:LENGTH]


def _source_file(obj) -> Path | None:
    try:
        f = inspect.getsourcefile(obj)
    except TypeError:
        return None
    return Path(f).resolve() if f else None


def _callable_files(fn) -> set[Path]:
    """Files of a case's callable: its function's, and, for a bound method or
    a closure, those of the callables its object or cells hold (a zoo case's
    ``torch_fn`` is a method of a model holding its family's ``build``)."""
    out: set[Path] = set()
    inner = [fn]
    if isinstance(fn, functools.partial):
        inner = [fn.func, *fn.args, *fn.keywords.values()]
    self_ = getattr(fn, "__self__", None)
    if self_ is not None and hasattr(self_, "__dict__"):
        inner.extend(v for v in vars(self_).values() if callable(v))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            inner.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    for f in inner:
        if callable(f) and not isinstance(f, type):
            p = _source_file(getattr(f, "__func__", f))
            if p is not None:
                out.add(p)
    return out


def _family_file(name: str) -> Path | None:
    import cases

    family = cases.families().get(name)
    if family is None or ":" in family or family == "file":
        return None
    return _source_file(sys.modules.get(f"cases.{family}"))


def _zoo_entry(name: str) -> dict | None:
    from cases import zoo

    for entries in zoo.table().values():
        if name in entries:
            return entries[name]
    return None


#: the script that prints an environment's versions as JSON (:func:`env_versions`)
_VERSIONS = (
    "import json, sys\nfrom importlib import metadata\nout = {{'python': sys.version.split()[0]}}\n"
    "for d in {dists!r}:\n    try:\n        out[d] = metadata.version(d)\n"
    "    except metadata.PackageNotFoundError:\n        pass\nprint(json.dumps(out))\n"
)


def _versions_here(dists: Iterable[str]) -> dict:
    """What :data:`_VERSIONS` prints, for this interpreter."""
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for d in dists:
        try:
            out[d] = metadata.version(d)
        except metadata.PackageNotFoundError:
            pass
    return out


@functools.cache
def env_versions(env: str) -> dict:
    """The versions of the systems (``harness.meta.IMPORTED``) installed in
    environment ``env``: in this interpreter for ``main``, else by asking the
    environment's interpreter once. ``{"missing": why}`` when it cannot say."""
    from . import meta

    dists = sorted(meta.IMPORTED)
    try:
        python = envs.python_for(env)
    except envs.EnvError as e:
        return {"missing": str(e)}
    if python == sys.executable:
        return _versions_here(dists)
    try:
        out = subprocess.run(
            [python, "-c", _VERSIONS.format(dists=dists)], capture_output=True, text=True, timeout=60, check=True
        ).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        return {"missing": f"{type(e).__name__}: {e}"}
