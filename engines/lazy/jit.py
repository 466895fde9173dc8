"""``jit``: a function run on the lazy path, traced on every call and compiled once per key.

Each call is one step of its :class:`~.runtime.LazyContext`: lazy leaves over the inputs,
the function traced on them (under :func:`.hooks.trace_step`), the outputs synced (a compile
on a cache miss) and released."""

from __future__ import annotations

import copy

import torch

from . import passes
from .hooks import trace_step
from .leafcall import take_leaves
from .ops import guess
from .runtime import LazyContext, axes_key
from .symbolic import UNPATCHED, NeedsSizedMethods, ShapeGuess
from .tensor import LazyTensor

_TENSOR = torch.Tensor


class LazyFunction:
    """``fn`` run on the lazy path: each call traces ``fn`` on lazy leaves over
    the inputs, syncs the outputs (compile on a cache miss) and returns torch
    tensors. ``dims``/``bounds`` are per input, as in :meth:`LazyContext.input`."""

    def __init__(self, fn, mode="unbounded", dims=None, bounds=None, ctx=None):
        self.fn = fn
        self.ctx = ctx or LazyContext(mode)
        self.dims, self.bounds = dims, bounds
        self.guards: list = []  # the last call's
        self.guard_log: dict = {}  # every distinct guard so far, as text
        self._logged: set = set()  # step-log keys whose guards are in guard_log
        self.sized_methods: bool | None = None  # whether a step patches them: see hooks.trace_step
        self.patches: bool | None = None  # whether a step swaps tracing()'s functions into torch: the same
        # (a copy of ``dims``, per input its axes key or None until made): a step reads the keys made for
        # dims equal to the ones it has (the same key objects, which a leaf matches by identity)
        self._axes: tuple | None = None

    def _record(self, args):
        """Trace ``fn`` on fresh lazy leaves over ``args``: (output, flat outputs). A step that
        needs ``torch.Tensor``'s sized methods after all (see ``hooks.trace_step``) is traced again.
        The first step (which learns ``sized_methods``) reads sizes as the later ones do: a size's
        ``__index__`` refused, so a creation function held from before the step (``torch.eye(n)``:
        torch's parser then calls ``__torch_function__``) records the same graph at every step."""
        if self.sized_methods is True:
            return self._trace_step(args)
        ctx = self.ctx
        ctx.sized_methods_off = True
        try:
            return self._trace_step(args)
        except NeedsSizedMethods:
            self.sized_methods = self.patches = True
        finally:
            ctx.sized_methods_off = False
        return self._trace_step(args)

    def _leaves(self, ctx, args, dims, keys, bounds) -> list:
        """The step's leaves over ``args``, one by one (``LazyContext.leaf``)."""
        leaves = []
        for i, a in enumerate(args):
            if type(a) is _TENSOR or isinstance(a, _TENSOR):
                if keys is None:
                    axes = True
                else:
                    axes = keys[i]
                    if axes is None:
                        axes = keys[i] = axes_key(dims[i])  # type: ignore[index]
                a = ctx.leaf(a, axes, None if bounds is None else bounds[i])
            leaves.append(a)
        return leaves

    def _trace_step(self, args):
        ctx = self.ctx
        ctx.new_step()
        dims, bounds, keys = self.dims, self.bounds, None
        if bounds is not None and ctx.mode != "bounded":  # (a leaf drops them: once here, not per input)
            bounds = None
        if dims is not None:
            plan = self._axes
            if plan is None or plan[0] != dims:  # (changed in place since the keys were made: made again)
                plan = self._axes = (copy.deepcopy(dims), [None] * len(dims))
            keys = plan[1]
        leaves = None
        if keys is not None and ctx.reused == 0:  # (the step takes the last one's nodes: its leaves at once)
            leaves = take_leaves(ctx, args, keys, bounds)
        if leaves is None:
            leaves = self._leaves(ctx, args, dims, keys, bounds)
        if self.patches is False and self.sized_methods is False:  # (hooks.trace_step's unpatched step)
            outer = UNPATCHED[0]
            UNPATCHED[0] = True
            try:
                out = self.fn(*leaves)
            except NeedsSizedMethods:
                raise
            except Exception as e:  # (torch's own function refusing a size, say): traced again with them
                raise NeedsSizedMethods(e) from e
            finally:
                UNPATCHED[0] = outer
        else:
            out = trace_step(self, leaves)
        flat = [out] if type(out) is LazyTensor else list(out) if isinstance(out, (list, tuple)) else [out]
        return out, flat

    def __call__(self, *args):
        ctx = self.ctx
        recovers = ctx.recovers
        ctx.recovers = True  # (the generic shape rule may guess: a wrong guess traces the step again)
        try:
            while True:
                try:
                    out, flat = self._record(args)
                    ctx.sync(flat)
                    break
                except ShapeGuess as e:
                    # the step's inputs are as they were (the generic rule refuses in-place calls, and
                    # a write-back to an input happens after its sync): traced again, guarded
                    if ctx.rechecks and not ctx.wrote:  # the last step's prediction, replayed: the rule
                        ctx.log = ctx.tape = None  # predicts afresh at these sizes (a step that follows none)
                        continue
                    if not guess.demote(e.key):
                        raise RuntimeError(f"lazy: a demoted function's check failed: {e}") from None
                    if ctx.wrote:  # (its first trace wrote into a tensor of the caller's: not repeated)
                        raise RuntimeError(
                            f"lazy: {e} after the step wrote into a concrete tensor; it is demoted, call again"
                        ) from None
        finally:
            ctx.recovers = recovers
        guards = self.guards = ctx.guards  # (a new list each step)
        if guards:
            lk, log = ctx.last_key, ctx.log
            whole = lk is not None and log is not None and log.nguards == len(guards)  # (its key holds every guard)
            if not whole or lk not in self._logged:
                for g in guards:
                    self.guard_log.setdefault(str(g))
                if whole and all(len(g.names) == len(g.vars) for g in guards):
                    self._logged.add(lk)  # every variable user-named: a step with this key logs the same texts
        if type(out) is LazyTensor:
            res = out.node.data
        else:
            res = [o.node.data if type(o) is LazyTensor else o for o in flat]
            if not isinstance(out, (list, tuple)):
                res = res[0]
            else:
                res = type(out)(*res) if hasattr(out, "_fields") else type(out)(res)  # (a named tuple: topk, sort)
        del out, flat  # (the step's tensors: none held here, so release may keep them for the next step)
        ctx.release()
        return res

    def trace(self, *args) -> tuple:
        """The per-step work without running: record, collect the graph, and
        compute its cache key. Returns ``(graph, key)``."""
        _, flat = self._record(args)
        g = self.ctx.trace([o for o in flat if isinstance(o, LazyTensor)])
        return g, passes.key(g, self.ctx.mode)

    def dump(self, *args) -> str:
        """The IR text for ``fn`` on ``args`` (traced, not compiled or run)."""
        _, flat = self._record(args)
        return self.ctx.dump(*[o for o in flat if isinstance(o, LazyTensor)])


def jit(fn=None, *, mode="unbounded", dims=None, bounds=None, ctx=None):
    """Decorator form of :class:`LazyFunction`."""
    if fn is None:
        return lambda f: LazyFunction(f, mode, dims, bounds, ctx)
    return LazyFunction(fn, mode, dims, bounds, ctx)
