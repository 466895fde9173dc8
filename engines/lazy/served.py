"""A sync served by its step-log key: the kernel run on the step's leaves and its outputs checked, one call.

``LazyContext.sync`` on a cached step gathered the kernel's inputs by log position in a loop, called
``_run``, which called the key's :func:`.symbolic.shapes_fn` for the predicted shapes, then compared
each output's dtype and shape: three frames and a list around a kernel of two torch calls on the
seed case. :func:`served_fn` generates that work per key, inputs and predicted sizes written out.
"""

from __future__ import annotations

import functools

from engines import sizes

from .ir import NO_KWARGS


@functools.lru_cache(maxsize=1024)
def served_fn(positions: tuple, shapes: tuple):
    """``serve(run, nodes, env, outputs)`` for a key whose kernel reads the log's nodes at
    ``positions`` and whose outputs have the symbolic ``shapes`` (tuples of ``Expr``): runs
    ``run`` on those nodes' data and, when every output has its node's dtype and the shape the
    sizes ``env`` give, makes each node of ``outputs`` a leaf holding it and returns None; else
    returns the kernel's outputs (a size it could not evaluate, a dtype or shape it did not
    predict), for the caller's per-dim check to name the fault (``LazyContext._run``)."""
    env = {n: f"env[{n!r}]" for shape in shapes for e in shape for n in e.vars}
    lines = [
        "def serve(run, nodes, env, outputs):",
        f"    outs = run({''.join(f'nodes[{p}].data, ' for p in positions)})",
        "    try:",
    ]
    for i, shape in enumerate(shapes):
        want = "(" + "".join(f"{sizes.source(e, env)}, " for e in shape) + ")"
        lines += [
            f"        if outs[{i}].dtype is not outputs[{i}].dtype or outs[{i}].shape != {want}:",
            "            return outs",
        ]
    lines += ["    except (KeyError, ZeroDivisionError):", "        return outs"]
    for i in range(len(shapes)):
        lines += [
            f"    node = outputs[{i}]",
            "    node.op, node.args, node.kwargs, node.data = 'input', (), NO_KWARGS, " + f"outs[{i}]",
        ]
    scope = {"NO_KWARGS": NO_KWARGS, "max": max, "min": min}
    exec("\n".join(lines), scope)  # (our own text: positions, and sizes.source of our size algebra)
    return scope["serve"]
