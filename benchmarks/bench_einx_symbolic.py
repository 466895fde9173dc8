"""asv benchmarks: einx_symbolic vs einx 0.4.3 vs raw torch on the report's divide.

The benchmark functions time only the work: imports, data and warm-up are in
``setup`` (tests/test_asv_suite.py checks that a benchmark function imports
nothing).

``time_novel_sizes_*``: 50 novel edge counts (E = 1000..1049, d = 8), one
sample per process as in ``python -m benchmarks.scripts.einx_symbolic`` (``number =
repeat = 1``, no warm-up, ``rounds`` fresh processes): einx_symbolic's one
graph build and einx's 50 builds are timed, the imports are not. ``setup``
also empties the caches, so every sample sees novel shapes even if ``repeat``
is raised: einx_symbolic's graph and parse caches are cleared, einx (whose
cache cannot be cleared) gets 50 sizes it has not seen in this process.
einx's first call imports parts of einx lazily; ``setup`` makes it on another
description, so the import is not timed.
``time_cached_*``: one call on an already-seen shape (warmed up in ``setup``).
``track_builds_*``: graphs built for the 50-size loop.

The workload (description, inputs, a fresh einx_symbolic) is the one of
``benchmarks/scripts/einx_symbolic.py``, beside the implementation; ``setup``
imports it, so discovering this module imports nothing of the project.
"""

import itertools
import warnings

N = 50  # novel sizes per loop
_einx_offset = itertools.count(1)  # einx's sizes for the k-th setup of a process: shifted by N k


class NovelSizes:
    timeout = 300
    # one sample per process: the first loop of a process is the honest one
    number = 1
    repeat = 1
    rounds = 5
    warmup_time = 0

    def setup(self):
        import einx
        import torch

        from benchmarks.scripts import einx_symbolic as bench

        warnings.simplefilter("ignore")
        self.desc = bench.DESC
        self.ex = bench.fresh()
        self.einx = einx
        sizes = range(bench.FIRST_E, bench.FIRST_E + N)
        self.data = bench.inputs(sizes)
        shift = N * next(_einx_offset)
        self.einx_data = bench.inputs(e + shift for e in sizes)
        einx.divide("a b, a -> a b", torch.ones(3, 2), torch.ones(3))  # einx's lazy imports, not its graph

    def time_novel_sizes_torch(self):
        for d, c in self.data:
            d / c.unsqueeze(-1)

    def time_novel_sizes_einx_symbolic(self):
        divide, desc = self.ex.divide, self.desc
        for d, c in self.data:
            divide(desc, d, c)

    def time_novel_sizes_einx(self):
        divide, desc = self.einx.divide, self.desc
        for d, c in self.einx_data:
            divide(desc, d, c)

    def track_builds_einx_symbolic(self):
        n0 = self.ex.compile_count()
        for d, c in self.data:
            self.ex.divide(self.desc, d, c)
        return self.ex.compile_count() - n0


class Cached:
    def setup(self):
        import einx

        from benchmarks.scripts import einx_symbolic as bench
        from engines import einx_symbolic as ex

        warnings.simplefilter("ignore")
        self.desc = bench.DESC
        ((self.d, self.c),) = bench.inputs([bench.FIRST_E])
        self.einx_divide, self.ex_divide = einx.divide, ex.divide
        for _ in range(20):
            self.d / self.c.unsqueeze(-1)
            self.einx_divide(self.desc, self.d, self.c)
            self.ex_divide(self.desc, self.d, self.c)

    def time_cached_torch(self):
        self.d / self.c.unsqueeze(-1)

    def time_cached_einx(self):
        self.einx_divide(self.desc, self.d, self.c)

    def time_cached_einx_symbolic(self):
        self.ex_divide(self.desc, self.d, self.c)
