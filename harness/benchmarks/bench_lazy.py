"""asv benchmarks: per-step cost of the lazy path against torch eager.

Every lazy step retraces the program (that is the lazy-tensor model), so the
cached cost is tracing + cache lookup + running the generated FX module.
``path``: ``eager`` (the torch form on tensors), ``lazy`` (a cached step in
unbounded mode), ``trace`` (recording + graph collection + cache key only).

The benchmark function times one step; ``make_step`` (imports, inputs, the
compile and a warm-up call) runs in ``setup``, once per process: asv re-runs
``setup`` before every sample, and the step it built is reused (a cached step
is the thing measured, so the samples share it).
"""

CASES = ["gnn_edge_divide", "gnn_rbf_subtract", "gnn_message_passing", "expand_over_batch"]


def make_step(case_name, path, mode="unbounded"):
    """``(step, args)`` for one catalogue case on one path, warmed up."""
    import torch

    import cases
    from backends import lazy

    torch.set_num_threads(1)  # the machine is shared: one thread keeps samples stable
    case = cases.get(case_name)
    sizes = case.sizes_for("quick")[0]
    args = [torch.from_numpy(a) for a in case.make_inputs(sizes, seed=0)]
    if path == "eager":
        step = case.torch_fn()
    else:
        axes = case.dynamic_axes(mode)
        fn = lazy.LazyFunction(case.torch_fn(), mode, [{ax: d.name for ax, d in a.items()} for a in axes],
                               [{ax: d.max for ax, d in a.items() if d.max is not None} for a in axes])
        fn(*args)  # compile once
        step = fn if path == "lazy" else fn.trace
    step(*args)
    return step, args


_STEPS: dict = {}  # (case, path) -> (step, args), built once per process


class TimeStep:
    params = (CASES, ["eager", "lazy", "trace"])
    param_names = ["case", "path"]
    timeout = 120

    def setup(self, case, path):
        if (case, path) not in _STEPS:
            _STEPS[case, path] = make_step(case, path)
        self.step, self.args = _STEPS[case, path]
        self.step(*self.args)  # warm: the timed call follows a call like it

    def time_step(self, case, path):
        self.step(*self.args)
