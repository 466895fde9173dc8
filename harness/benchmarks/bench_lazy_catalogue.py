"""asv: the lazy path's cached step against PyTorch's lazy tensor on every catalogue case.

``track_lazy_over_torch_lazy_ts``: seconds per cached call of ``lazy`` over
those of ``torch_lazy_ts`` (unbounded mode, the first quick shape), one number
per catalogue case with a torch form; at most 1 when the lazy path is no
slower than the C++ lazy tensor. Measured in ``setup`` by the lazy path's own
benchmark (``backends/lazy/bench.py``: compile, warm-up, then both steps'
samples interleaved, process CPU time), three samples each: one track per case,
no asv repeats, so the whole catalogue costs about a second a case.
torch_xla_lazy lives in another environment: ``python -m backends.lazy.bench``
measures it beside these, with eager and the verdict per case.
"""

from backends.lazy.bench import catalogue_cases, interleaved, make_step

PEER = "torch_lazy_ts"
_RATIOS: dict = {}  # case -> ratio, measured once per process


class LazyOverPeer:
    params = (catalogue_cases(checked=False),)
    param_names = ["case"]
    unit = "ratio"
    timeout = 120

    def setup(self, case):
        if case not in _RATIOS:
            try:
                steps = {p: make_step(case, p) for p in ("lazy", PEER)}
            except Exception as e:  # noqa: BLE001  (a path that cannot run the case: asv shows n/a)
                raise NotImplementedError(f"{case}: {type(e).__name__}: {e}") from e
            t = interleaved(steps, 3, "cpu")
            _RATIOS[case] = t["lazy"] / t[PEER]
        self.ratio = _RATIOS[case]

    def track_lazy_over_torch_lazy_ts(self, case):
        return self.ratio
