"""asv benchmarks: per-step cost of the lazy path against torch eager and torch._lazy.

The steps, their cases and paths are the lazy path's own benchmark
(``benchmarks/scripts/lazy.py``, ``python -m benchmarks.scripts.lazy``): ``eager``
(the torch form on tensors), ``lazy`` (a cached step in unbounded mode),
``trace`` (recording + graph collection + full cache key only),
``torch_lazy_ts`` (torch._lazy's TorchScript backend, symbolic-shape mode).
torch_xla_lazy lives in another environment: the script measures it, asv does not.

asv runs each (case, path) in a process of its own: every path under the same
conditions, as the script's workers. The benchmark function times one step;
``make_step`` (inputs, the compile and a warm-up call) runs in ``setup``, once
per process: asv re-runs ``setup``
before every sample, and the step it built is reused (a cached step is the
thing measured, so the samples share it).
"""

from benchmarks.scripts.lazy import CASES, PATHS, make_step

_STEPS: dict = {}  # (case, path) -> (step, args), built once per process


class TimeStep:
    params = (CASES, PATHS)
    param_names = ["case", "path"]
    timeout = 120

    def setup(self, case, path):
        if (case, path) not in _STEPS:
            _STEPS[case, path] = make_step(case, path)
        self.step, self.args = _STEPS[case, path]
        self.step(*self.args)  # warm: the timed call follows a call like it

    def time_step(self, case, path):
        self.step(*self.args)
