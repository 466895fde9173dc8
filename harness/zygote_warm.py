"""The fork server's second stage: preload steps that resolve a per-job variable.

The steps are the backends' own (``Backend.warmup``: ``module`` or
``module:function``; :func:`harness.forkserver.declared` collects them): e.g.
``import torch._dynamo`` resolves the inductor cache directory (its
``DynamoCache`` calls ``cache_dir()``, which also writes
``TORCHINDUCTOR_CACHE_DIR`` into the environment), and inductor's vector-ISA
probe (torch_compile's warm-up function) builds into that directory. A zygote cannot know a job's directory, so these steps run with
every per-job variable pointing into a scratch directory of the zygote's own
(as inductor's ``fresh_cache`` isolates a test). Afterwards the zygote removes
the variables again, clears inductor's in-memory caches keyed on the directory
(``torch._inductor.utils.clear_caches``) and looks for the directory's path in
every module: a module-level string, or a string
attribute of a module-level object. A holder other than :data:`REREAD` makes
the zygote unsafe (its jobs spawn, with one warning), since a forked job would
use the zygote's directory instead of its own.

The scratch directory is kept across zygotes, one per interpreter
(:func:`scratch_dir`): the vector-ISA probe's builds are cached there by
inductor itself, so only a machine's first zygote pays the g++ builds (~16 s
of the ~21 CPU-s of a cold warm-up; ~3 s warm, measured idle on the 2-core
machine), and every ``harness run`` after it starts its zygote that much
sooner; the probe's ``dlopen`` of each build, a fresh interpreter each (~2 s
in all), is remembered there too (:func:`remembered_probes`). ``DYNSHAPE_ZYGOTE_CACHE`` names another directory, or ``off`` for a
fresh one removed afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import shutil
import sys
import tempfile
import time
import warnings

#: holders of the scratch path that are never read: the object re-reads the
#: variable on every use
REREAD = {
    "torch._dynamo.package.DynamoCache._path_prefix": "DiskDynamoCache overrides path_prefix() to call cache_dir() on every use",
    "torch._dynamo.precompile_context.DynamoCache._path_prefix": "the same object as torch._dynamo.package's",
}


#: where the warm-up's scratch directory lives (``off``: a temporary one per zygote)
CACHE_SWITCH = "DYNSHAPE_ZYGOTE_CACHE"


def scratch_dir() -> tuple[str, bool]:
    """The warm-up's scratch directory and whether it is kept: ``$DYNSHAPE_ZYGOTE_CACHE``,
    else ``~/.cache/dynshape/zygote/<interpreter>`` (one per ``sys.prefix``, so
    environments never share builds), else (``off``, or not writable) a
    temporary directory removed after the warm-up."""
    chosen = os.environ.get(CACHE_SWITCH, "")
    if chosen.strip().lower() not in ("off", "0", "no", "false"):
        if not chosen:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            chosen = os.path.join(base, "dynshape", "zygote", hashlib.sha1(sys.prefix.encode()).hexdigest()[:12])
        try:
            os.makedirs(chosen, exist_ok=True)
            return chosen, True
        except OSError:
            pass
    return tempfile.mkdtemp(prefix="dynshape-zygote-"), False


class Unsafe(Exception):
    """A step left the scratch directory where a forked job would read it."""


def run(steps, per_job) -> dict:
    """Run ``steps`` (``module``: imported; ``module:function``: imported, then
    called without arguments; in order; a module missing from the environment
    is skipped) with each of ``per_job`` set to a path in a scratch
    directory; then unset them, clear inductor's caches and check that nothing
    holds the directory. Returns ``steps`` (run), ``missing`` (not importable),
    ``seconds`` and ``scratch`` (the directory, :func:`scratch_dir`); raises :class:`Unsafe` naming the holders, or the step's
    own error."""
    t0 = time.perf_counter()
    scratch, kept = scratch_dir()
    saved = {k: os.environ.get(k) for k in per_job}
    os.environ.update({k: os.path.join(scratch, k.lower()) for k in per_job})
    done, missing = [], []
    try:
        for step in steps:
            name, _, func = step.partition(":")
            try:
                module = importlib.import_module(name)
            except ImportError:
                missing.append(step)
                continue
            if func:
                with remembered_probes(_vec_isa_class() if kept else None):
                    getattr(module, func)()
            done.append(step)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if "torch._inductor.utils" in sys.modules:
            sys.modules["torch._inductor.utils"].clear_caches()
        if not kept:
            shutil.rmtree(scratch, ignore_errors=True)
    held = [h for h in holders(scratch) if h not in REREAD]
    if held:
        raise Unsafe(
            f"after {', '.join(done)}: {', '.join(held[:5])} still hold the zygote's scratch directory, "
            "which each job sets itself"
        )
    return {"steps": done, "missing": missing, "seconds": time.perf_counter() - t0, "scratch": scratch}


def _vec_isa_class():
    """inductor's ``VecISA`` (``None`` without inductor)."""
    try:
        from torch._inductor.cpu_vec_isa import VecISA
    except ImportError:
        return None
    return VecISA


#: beside a build whose load succeeded: what it was checked against
PROBE_MEMO = ".dlopen-ok"


@contextlib.contextmanager
def remembered_probes(cls):
    """While inside, ``cls._probe_load(self, path)`` (inductor's check that a
    vector-ISA build loads: a fresh interpreter that ``dlopen``s it, ~0.2 s
    each, ten per warm-up) answers ``True`` without a process for a build that
    loaded before and is unchanged, with the same torch: the success is kept
    beside the build (``<path>.dlopen-ok``: its size and mtime, torch's
    version and its library's mtime). Used only for the kept scratch
    directory, whose builds are this interpreter's own; a failure is never
    kept. ``cls`` ``None`` or without ``_probe_load``: nothing changes."""
    original = getattr(cls, "_probe_load", None) if cls is not None else None
    if original is None:
        yield
        return

    def stamp(path: str) -> str:
        import torch

        lib = os.path.join(os.path.dirname(torch.__file__), "lib")
        so, libtorch = os.stat(path), os.stat(os.path.join(lib, "libtorch_cpu.so") if os.path.isdir(lib) else lib)
        return f"{so.st_size} {so.st_mtime_ns} {torch.__version__} {libtorch.st_mtime_ns}"

    def probe_load(self, output_path: str) -> bool:
        memo = output_path + PROBE_MEMO
        with contextlib.suppress(OSError), open(memo, encoding="utf-8") as f:
            if f.read() == stamp(output_path):
                return True
        ok = original(self, output_path)
        if ok:
            with contextlib.suppress(OSError):
                tmp = f"{memo}.{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(stamp(output_path))
                os.replace(tmp, memo)
        return ok

    cls._probe_load = probe_load
    try:
        yield
    finally:
        cls._probe_load = original


def holders(path: str) -> list[str]:
    """Where a module (or an object at a module's top level) keeps a string
    containing ``path``: ``module.name`` or ``module.name.attribute``."""
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated module attributes warn when touched
        for mod_name, module in list(sys.modules.items()):
            try:
                items = list(vars(module).items())
            except TypeError:
                continue
            for name, value in items:
                if isinstance(value, str):
                    if path in value:
                        found.append(f"{mod_name}.{name}")
                    continue
                if isinstance(value, (type, type(sys))):
                    continue
                try:
                    attrs = list(vars(value).items())
                except TypeError:
                    continue
                found += [f"{mod_name}.{name}.{a}" for a, v in attrs if isinstance(v, str) and path in v]
    return found
