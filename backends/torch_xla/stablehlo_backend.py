"""torch_xla StableHLO export, executed by our StableHLO executors.

The backend object runs in the ``main`` environment (where
``backends.stablehlo`` and its jax-based executors live). On the first call
of a job it writes the call's inputs to a temporary ``.npz`` and runs
``.venv-xla/bin/python -m backends.torch_xla.export`` once: ``torch.export``
with ``torch.export.Dim`` (``Dim(max=)`` in bounded mode), then
``torch_xla.stablehlo.exported_program_to_stablehlo`` under
``PJRT_DEVICE=CPU EXPERIMENTAL_XLA_UNBOUNDED_DYNAMISM=1``. Every call then runs
the returned text with ``backends.stablehlo.execute(text, args, executor)``,
its arguments permuted into torch_xla's ``@main`` order.

Compile stages: ``export`` (1 per successful export, in the xla env) and
``xla`` (the executor's XLA compiles: one per novel shape, as it refines the
`?` dims to the call's shapes; 0 for the interpreter). The first call's latency
includes starting the xla-env interpreter and importing torch + torch_xla
(~10-20 s on the 2-core machine; ``compile_time_s`` leaves that start-up out).

A failed export is remembered: every later call of the job raises the same
error without re-exporting, so each shape's record carries torch_xla's message.

Variants: ``torch_xla_stablehlo`` exports the catalogue's program as it is.
``torch_xla_stablehlo_canon`` first rewrites negative ``unsqueeze`` dims
(``unsqueeze(-1)`` -> ``unsqueeze(rank)``), working around torch_xla 2.9.0's
``dynamic_unsqueeze_to_view`` bug, so the rest of the pipeline can be
measured; ``torch_xla_stablehlo_interp`` is that with the reference interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

import numpy as np

from ..base import Backend


class ExportFailed(RuntimeError):
    """torch_xla could not produce StableHLO for the case (message: torch_xla's error)."""


def xla_python() -> str:
    from harness import envs

    return envs.python_for("xla")


def run_exports(jobs, timeout: float = 600.0) -> list[dict]:
    """Export several ``(case_name, mode, arrays, canonicalize)`` in one run of
    :mod:`backends.torch_xla.export` in the xla environment; a result dict each.

    Raises :class:`harness.envs.EnvError` when ``.venv-xla`` is missing and
    :class:`ExportFailed` when the worker dies without an answer.
    """
    from harness import envs

    python = envs.python_for("xla")
    env = dict(os.environ)
    env.update(envs.env_vars("xla"))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with tempfile.TemporaryDirectory(prefix="dynshape-xla-export-") as tmp:
        specs = []
        for k, (case_name, mode, arrays, canonicalize) in enumerate(jobs):
            npz = os.path.join(tmp, f"inputs{k}.npz")
            np.savez(npz, **{f"arg{i}": np.asarray(a) for i, a in enumerate(arrays)})
            specs.append({"case": case_name, "mode": mode, "canonicalize": bool(canonicalize), "inputs": npz})
        out = os.path.join(tmp, "result.json")
        job = os.path.join(tmp, "job.json")
        with open(job, "w") as f:
            json.dump({"jobs": specs, "out": out}, f)
        try:
            proc = subprocess.run([python, "-m", "backends.torch_xla.export", job], cwd=str(envs.ROOT), env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise ExportFailed(f"torch_xla export worker gave no answer within {timeout:.0f}s") from e
        if not os.path.exists(out):
            tail = "\n".join((proc.stderr or "").strip().splitlines()[-15:])
            raise ExportFailed(f"torch_xla export worker exited with code {proc.returncode} "
                               f"and no result; stderr tail:\n{tail}")
        with open(out) as f:
            return json.load(f)


def run_export(case_name: str, mode: str, arrays, canonicalize: bool = False, timeout: float = 600.0) -> dict:
    """One export (see :func:`run_exports`)."""
    return run_exports([(case_name, mode, arrays, canonicalize)], timeout)[0]


def describe_failure(res: dict) -> str:
    where = f" [at {res['where']}]" if res.get("where") else ""
    return f"torch_xla {res.get('stage', '?')} failed: {res.get('error', '?')}{where}"


class TorchXlaStableHLO(Backend):
    name = "torch_xla_stablehlo"
    forms = ("torch",)
    modes = ("unbounded", "bounded")
    env = "main"  # the executors are here; the export runs in a subprocess of the xla env
    requires = ("jax", "jaxlib")
    canonicalize = False
    executor = "xla"

    def __init__(self):
        self._reset()

    def _reset(self):
        self.result: dict | None = None
        self._failure: str | None = None
        self._exports = 0
        self._export_wall_s = 0.0  # the export subprocess, interpreter start included
        self._export_work_s = 0.0  # torch.export + torch_xla lowering, timed inside it
        self._xla_base = None
        self._guards: list[str] = []

    def available(self):
        from harness import envs

        ok, why = envs.modules_available("xla", ("torch", "torch_xla"))
        if not ok:
            return ok, why
        return envs.modules_available("main", self.requires)

    def prepare(self, case, mode):
        from backends import stablehlo

        self._reset()
        self._xla_base = self._executor_state(stablehlo)
        state = {"text": None, "order": None, "consts": {}}

        def program(*args):
            if self._failure is not None:
                raise ExportFailed(self._failure)
            if state["text"] is None:
                self._export(case, mode, args, state)
            full = [state["consts"][i] if p is None else args[p] for i, p in enumerate(state["order"])]
            outs = stablehlo.execute(state["text"], full, executor=self.executor)
            return outs[0] if len(outs) == 1 else outs

        return program

    def _export(self, case, mode, args, state):
        from .export import array_from_b64

        t0 = time.perf_counter()
        try:
            res = run_export(case.name, mode, args, self.canonicalize, timeout=min(600.0, self.timeout_s))
        except Exception as e:  # no answer (worker died, timed out) or no xla env: don't retry per shape
            self._failure = str(e) if isinstance(e, ExportFailed) else f"{type(e).__name__}: {e}"
            raise
        finally:
            self._export_wall_s += time.perf_counter() - t0
        self.result = res
        self._export_work_s += float(res.get("export_s") or 0.0) + float(res.get("to_stablehlo_s") or 0.0)
        if not res.get("ok"):
            self._failure = describe_failure(res)
            raise ExportFailed(self._failure)
        self._exports += 1
        state["order"] = res["arg_positions"]
        state["consts"] = {i: array_from_b64(b) for i, b in res.get("constants", [])}
        state["text"] = res["text"]
        self._guards = self._record(case, mode, res)

    @staticmethod
    def _record(case, mode, res) -> list[str]:
        """What torch_xla made of the case's dims: specialised axes, dropped bounds, rewrites."""
        notes = list(res.get("notes", []))
        sig = res.get("inputs", [])
        for i, p in enumerate(res.get("arg_positions", [])):
            if p is None or i >= len(sig):
                continue
            inp = case.inputs[p]
            dyn = case.dynamic_axes(mode)[p]
            kept = set(sig[i].get("dynamic_dims", []))
            for ax, dim in dyn.items():
                if ax not in kept:
                    notes.append(f"{inp.name} axis {ax} ({dim.name}) specialised to {sig[i]['shape'][ax]}")
                elif dim.max is not None:
                    notes.append(f"{inp.name} axis {ax} ({dim.name}<={dim.max}): bound dropped, exported as '?'")
        for p in res.get("unused_inputs", []):
            notes.append(f"input {case.inputs[p].name} is not an argument of @main")
        return notes

    def _executor_state(self, stablehlo):
        if self.executor != "xla":
            return (0, 0.0)
        st = stablehlo.xla_stats()
        return (st.compiles, sum(st.compile_seconds) + sum(st.refine_seconds))

    def compile_stats(self):
        from backends import stablehlo

        out = {"export": self._exports}
        if self._xla_base is not None and self.executor == "xla":
            out["xla"] = self._executor_state(stablehlo)[0] - self._xla_base[0]
        return out

    def compile_time_s(self):
        """torch.export + torch_xla's lowering (timed in the xla env) plus the
        executor's refine + compile time. Starting the xla-env interpreter and
        importing torch_xla (``export_wall_s`` minus this) is left out; it is in
        the first call's latency."""
        from backends import stablehlo

        if self._xla_base is None:
            return None
        return self._export_work_s + self._executor_state(stablehlo)[1] - self._xla_base[1]

    @property
    def export_wall_s(self) -> float:
        """Wall time of the export subprocess(es), interpreter start included."""
        return self._export_wall_s

    def guards(self):
        return list(self._guards)


class TorchXlaStableHLOCanon(TorchXlaStableHLO):
    name = "torch_xla_stablehlo_canon"
    canonicalize = True


class TorchXlaStableHLOCanonInterp(TorchXlaStableHLO):
    name = "torch_xla_stablehlo_interp"
    canonicalize = True
    executor = "interpreter"
