"""asv benchmarks: einx_symbolic vs einx 0.4.3 vs raw torch on the report's divide.

``time_novel_sizes_*``: 50 novel edge counts (E = 1000..1049, d = 8) per
sample; einx_symbolic builds its graph once per process, einx rebuilds per
shape (its cache is cleared in ``setup`` so every sample sees novel sizes).
``time_cached_*``: one call on an already-seen shape.
``track_builds_*``: graphs built for the 50-size loop.
"""
import warnings

DESC = "e d, e -> e d"
SIZES = range(1000, 1050)


class NovelSizes:
    timeout = 300

    def setup(self):
        import torch
        warnings.simplefilter("ignore")
        self.data = [(torch.randn(e, 8), torch.rand(e) + 1) for e in SIZES]

    def time_novel_sizes_torch(self):
        for d, c in self.data:
            d / c.unsqueeze(-1)

    def time_novel_sizes_einx_symbolic(self):
        from backends import einx_symbolic as ex
        for d, c in self.data:
            ex.divide(DESC, d, c)

    def time_novel_sizes_einx(self):
        import einx
        # einx keys its cache on concrete shapes: shift sizes so each sample is novel
        self.shift = getattr(self, "shift", 0) + 50
        import torch
        for e in SIZES:
            einx.divide(DESC, torch.empty(e + self.shift, 8), torch.ones(e + self.shift))

    def track_builds_einx_symbolic(self):
        from backends import einx_symbolic as ex
        n0 = ex.compile_count()
        ex.clear_cache()
        for d, c in self.data:
            ex.divide(DESC, d, c)
        return ex.compile_count() - n0


class Cached:
    def setup(self):
        import torch
        self.d, self.c = torch.randn(1000, 8), torch.rand(1000) + 1
        import einx
        from backends import einx_symbolic as ex
        einx.divide(DESC, self.d, self.c)
        ex.divide(DESC, self.d, self.c)

    def time_cached_torch(self):
        self.d / self.c.unsqueeze(-1)

    def time_cached_einx(self):
        import einx
        einx.divide(DESC, self.d, self.c)

    def time_cached_einx_symbolic(self):
        from backends import einx_symbolic as ex
        ex.divide(DESC, self.d, self.c)
