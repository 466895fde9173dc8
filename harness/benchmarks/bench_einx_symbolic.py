"""asv benchmarks: einx_symbolic vs einx 0.4.3 vs raw torch on the report's divide.

The benchmark functions time only the work: imports, data and warm-up are in
``setup`` (tests/test_asv_suite.py checks that a benchmark function imports
nothing).

``time_novel_sizes_*``: 50 novel edge counts (E = 1000..1049, d = 8), one
sample per process as in ``python -m harness.bench_einx_symbolic`` (``number =
repeat = 1``, no warm-up, ``rounds`` fresh processes): einx_symbolic's one
graph build and einx's 50 builds are timed, the imports are not. ``setup``
also empties the caches, so every sample sees novel shapes even if ``repeat``
is raised: einx_symbolic's graph and parse caches are cleared, einx (whose
cache cannot be cleared) gets 50 sizes it has not seen in this process.
einx's first call imports parts of einx lazily; ``setup`` makes it on another
description, so the import is not timed.
``time_cached_*``: one call on an already-seen shape (warmed up in ``setup``).
``track_builds_*``: graphs built for the 50-size loop.
"""
import itertools
import warnings

DESC = "e d, e -> e d"
SIZES = range(1000, 1050)
_einx_offset = itertools.count(1)  # einx's sizes for the k-th setup of a process: SIZES shifted by 50 k


def _fresh_einx_symbolic():
    """The einx_symbolic module with nothing cached, as in a fresh process."""
    from backends import einx_symbolic as ex
    from backends.einx_symbolic import parse

    ex.clear_cache()
    parse.parse.cache_clear()  # description parses (clear_cache keeps them)
    return ex


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

        warnings.simplefilter("ignore")
        self.ex = _fresh_einx_symbolic()
        self.einx = einx
        self.data = [(torch.randn(e, 8), torch.rand(e) + 1) for e in SIZES]
        shift = 50 * next(_einx_offset)
        self.einx_data = [(torch.randn(e + shift, 8), torch.rand(e + shift) + 1) for e in SIZES]
        einx.divide("a b, a -> a b", torch.ones(3, 2), torch.ones(3))  # einx's lazy imports, not its graph

    def time_novel_sizes_torch(self):
        for d, c in self.data:
            d / c.unsqueeze(-1)

    def time_novel_sizes_einx_symbolic(self):
        divide = self.ex.divide
        for d, c in self.data:
            divide(DESC, d, c)

    def time_novel_sizes_einx(self):
        divide = self.einx.divide
        for d, c in self.einx_data:
            divide(DESC, d, c)

    def track_builds_einx_symbolic(self):
        n0 = self.ex.compile_count()
        for d, c in self.data:
            self.ex.divide(DESC, d, c)
        return self.ex.compile_count() - n0


class Cached:
    def setup(self):
        import einx
        import torch

        from backends import einx_symbolic as ex

        warnings.simplefilter("ignore")
        self.d, self.c = torch.randn(1000, 8), torch.rand(1000) + 1
        self.einx_divide, self.ex_divide = einx.divide, ex.divide
        for _ in range(20):
            self.d / self.c.unsqueeze(-1)
            self.einx_divide(DESC, self.d, self.c)
            self.ex_divide(DESC, self.d, self.c)

    def time_cached_torch(self):
        self.d / self.c.unsqueeze(-1)

    def time_cached_einx(self):
        self.einx_divide(DESC, self.d, self.c)

    def time_cached_einx_symbolic(self):
        self.ex_divide(DESC, self.d, self.c)
