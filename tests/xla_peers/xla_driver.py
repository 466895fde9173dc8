"""Runs inside .venv-xla for tests/xla_peers: drives TorchXlaLazy through the
backend API (as harness.measure does) for several jobs in one interpreter
(importing torch_xla costs seconds), and one job through harness.measure.run.

    .venv-xla/bin/python tests/xla_peers/xla_driver.py SPEC.json

SPEC: {"jobs": [{"case", "mode", "sizes": [{dim: size}], "repeat": [index, ...]}],
       "measure": {"case", "mode", "profile"} | null, "out": DIR}
Writes DIR/result.json and DIR/outputs.npz (key "j{job}_s{step}").
Each step uses inputs ``case.make_inputs(sizes, seed=index)``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np


def run_job(job: dict, outputs: dict, j: int) -> dict:
    import cases
    from harness.registry import load_spec

    backend = load_spec("backends.torch_xla_lazy:TorchXlaLazy")
    case = cases.get(job["case"])
    program = backend.prepare(case, job["mode"])
    steps = []
    order = list(range(len(job["sizes"]))) + list(job.get("repeat", []))
    for s, index in enumerate(order):
        sizes = job["sizes"][index]
        args = program.convert(case.make_inputs(sizes, seed=index))
        step = {"index": index, "sizes": sizes}
        try:
            out = program(*args)
            program.sync(out)
            got = program.to_numpy(out)
            outputs[f"j{j}_s{s}"] = got
            step.update(ok=True, shape=list(got.shape), dtype=str(got.dtype))
        except Exception as e:
            step.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000])
        step.update(
            compile_stats=program.compile_stats(), cache_hits=program.cache_hits(), compile_time_s=program.compile_time_s()
        )
        steps.append(step)
    return {"steps": steps}


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    result: dict = {"jobs": [], "measure": None}
    outputs: dict = {}
    for j, job in enumerate(spec["jobs"]):
        try:
            result["jobs"].append(run_job(job, outputs, j))
        except Exception:
            result["jobs"].append({"fatal": traceback.format_exc()[-3000:]})
    if spec.get("measure"):
        try:
            import cases  # noqa: F401
            from harness import measure
            from harness.registry import load_spec

            records: list = []
            job = dict(spec["measure"], repeats=2, warmup=1)
            measure.run(job, load_spec("backends.torch_xla_lazy:TorchXlaLazy"), records.append)
            result["measure"] = records
        except Exception:
            result["measure"] = {"fatal": traceback.format_exc()[-3000:]}
    result["modules"] = {m: m in sys.modules for m in ("jax", "pandas", "torch_xla")}
    np.savez(os.path.join(spec["out"], "outputs.npz"), **outputs)
    with open(os.path.join(spec["out"], "result.json"), "w") as f:
        json.dump(result, f, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
