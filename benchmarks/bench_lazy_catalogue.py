"""asv: the lazy path's cached step against PyTorch's lazy tensor on every catalogue case.

``track_lazy_over_torch_lazy_ts``: seconds per cached call of ``lazy`` over
those of ``torch_lazy_ts`` (unbounded mode, the first quick shape), one number
per catalogue case with a torch form; at most 1 when the lazy path is no
slower than the C++ lazy tensor. Measured in ``setup`` by the lazy path's own
benchmark (``benchmarks/scripts/lazy.py``'s ``run``: each path in a worker process
of its own, compile, warm-up, then both steps' samples interleaved, process CPU
time), three samples each: one track per case, no asv repeats; the two workers'
start-up makes it a few seconds a case.
torch_xla_lazy lives in another environment: ``python -m benchmarks.scripts.lazy``
measures it beside these, with eager and the verdict per case.
"""

from benchmarks.scripts.lazy import catalogue_cases, run

PEER = "torch_lazy_ts"
_RATIOS: dict = {}  # case -> ratio, measured once per process


class LazyOverPeer:
    params = (catalogue_cases(checked=False),)
    param_names = ["case"]
    unit = "ratio"
    timeout = 120

    def setup(self, case):
        if case not in _RATIOS:
            times, failures = run([case], ["lazy", PEER], 3, "cpu")
            t = times[case]
            if None in (t["lazy"], t[PEER]):  # a path that cannot run the case: asv shows n/a
                why = "; ".join(f"{p}: {w}" for (_, p), w in failures.items()) or "no samples"
                raise NotImplementedError(f"{case}: {why}")
            _RATIOS[case] = t["lazy"] / t[PEER]
        self.ratio = _RATIOS[case]

    def track_lazy_over_torch_lazy_ts(self, case):
        return self.ratio
