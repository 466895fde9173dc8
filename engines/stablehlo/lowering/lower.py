"""torch.export ExportedProgram -> StableHLO MLIR text: the driver.

:func:`lower` walks ``ep.run_decompositions().graph`` (core ATen), keeps one
:class:`~.builder.Value` per fx node and dispatches each ``call_function``
node through one table, the ``@lowers`` registry (:mod:`.registry`, filled by
importing :mod:`.ops`). Errors from an op's lowering get the "While lowering
<node>" context here, in one place. The text is emitted in MLIR's generic op
form, then parsed and verified with jaxlib's bindings and returned in pretty
form.
"""

from __future__ import annotations

import contextlib

import numpy as np
import sympy
import torch

from engines import sizes

from . import ops  # noqa: F401  (fills the registry)
from . import types as T
from .builder import LoweringContext, LoweringError, Value
from .ops.control import EffectToken
from .registry import LOWERINGS, label, reached, target_name
from .symbolic import as_dim
from .verify import VerificationError
from .verify import verify as _verify


def covered_ops():
    """Sorted names of every op the lowering handles (the registry is the coverage list)."""
    return sorted({label(t) for t in LOWERINGS})


def lower(
    ep: torch.export.ExportedProgram,
    *,
    bounded: bool = True,
    decompose: bool = True,
    params: str = "inline",
    verify: bool = True,
    data_asserts: str = "error",
) -> str:
    """Lower an ExportedProgram to StableHLO MLIR text (parsed + verified).

    bounded:   emit ``#stablehlo.bounds`` for dims with a finite ``Dim(max=)``
               (False: every symbolic dim is a plain unbounded ``?``).
    decompose: run ``ep.run_decompositions()`` (core ATen but :data:`KEPT_WHOLE`) first
               (:func:`decomposed`).
    params:    "inline" embeds parameters/buffers/constants as constants;
               "args" makes them leading ``@main`` arguments (see ``param_arrays``).
    data_asserts: "error" (an assertion on tensor *data*, e.g. one_hot's
               ``_assert_async``, which neither executor can check, is a
               LoweringError) or "skip" (the caller accepts it is not checked).
    Shape assertions are always kept as checks (``shape_assertion``).
    """
    if data_asserts not in ("error", "skip"):
        raise ValueError(f"data_asserts={data_asserts!r}: want 'error' or 'skip'")
    if decompose:
        ep = decomposed(ep)
    ctx = LoweringContext(ep, bounded=bounded)
    ctx.data_asserts = data_asserts
    ctx.lower_subgraph = lambda gm, values: _subgraph(ctx, gm, values)
    env: dict[str, object] = {}
    args = _arguments(ctx, ep, env, params)
    outputs = lower_graph(ctx, ep.graph_module, env, lambda node, vals: _outputs(ctx, ep, node, vals))
    text = _assemble(ctx, args, outputs)
    if not verify:
        return text
    try:
        return _verify(text)
    except VerificationError as e:
        raise LoweringError(f"lowered module failed StableHLO verification:\n{e}") from e


#: ops kept whole through ``run_decompositions`` and lowered as themselves: torch's
#: decomposition of scaled_dot_product_attention changes the output's strides from
#: the traced kernel's, and a later eager-valid ``view`` then fails the retrace
#: (GPT-2: "Cannot view a tensor with shape [2, s, 32] and strides (32, 64, 1)")
KEPT_WHOLE = (torch.ops.aten.scaled_dot_product_attention.default,)


def decompositions(unlowered: bool = True):
    """torch.export's core-ATen table without the ops in :data:`KEPT_WHOLE`, and
    (``unlowered``) torch's decomposition of every op it keeps that the registry
    does not lower (:func:`unlowered_decompositions`)."""
    table = torch.export.default_decompositions()
    for op in KEPT_WHOLE:
        table.pop(op, None)
    if not unlowered:
        return table
    # (membership on torch's CustomDecompTable itself would collect every CIA op of
    # every namespace, which :func:`cia_ops_materialized_once` saves; its aten ops are
    # all in ``decomp_table`` from the start)
    have = getattr(table, "decomp_table", table)
    table.update({op: fn for op, fn in unlowered_decompositions().items() if op not in have})
    return table


def unlowered_decompositions() -> dict:
    """``{op: decomposition}`` from ``torch._decomp.decomposition_table`` (which
    holds ``torch._refs``'s registrations too) for each op overload the
    ``@lowers`` registry lacks: a core-ATen op with no lowering of its own
    (``addmv``, ``acosh``, ``diagonal``, ...) is lowered as the ops torch
    decomposes it to, not refused. An op the registry lowers keeps its lowering;
    :data:`KEPT_WHOLE` ops, and ``out=`` / in-place overloads (no functional
    graph holds them), are left out, and so are random ops
    (``nondeterministic_seeded``: a decomposition draws other numbers than eager's
    kernel, a refusal names them instead)."""
    from torch._decomp import decomposition_table

    out = {}
    for op, fn in decomposition_table.items():
        if op in LOWERINGS or op in KEPT_WHOLE or not isinstance(op, torch._ops.OpOverload):
            continue
        schema = op._schema
        if schema.is_mutable or any(a.is_out for a in schema.arguments) or op.overloadpacket.__name__.endswith("_"):
            continue
        if torch.Tag.nondeterministic_seeded in op.tags:
            continue
        out[op] = fn
    return out


def decomposed(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``ep.run_decompositions`` with :func:`decompositions`: size-obliviously
    (``backed_size_oblivious``) when ``ep.size_oblivious`` says it was exported so
    (``engines.torch_export_tools.export_oblivious_retry``), else the retrace guards
    derived sizes against 0 and 1 again, as runtime asserts that fail at sizes
    the export covers."""
    import torch.fx.experimental._config as fx_config

    with fx_config.patch(backed_size_oblivious=bool(getattr(ep, "size_oblivious", False))), cia_ops_materialized_once():
        try:
            return ep.run_decompositions(decompositions())
        except Exception:
            # a decomposition of an unlowered op that export's retrace cannot take (torch's
            # refs for complex, polar, diagonal_scatter write a fresh tensor in place): the
            # core-ATen graph, whose unlowered op is then refused by name
            return ep.run_decompositions(decompositions(unlowered=False))


@contextlib.contextmanager
def cia_ops_materialized_once():
    """Within it, torch asks its C++ dispatcher for the CompositeImplicitAutograd
    ops once. torch 2.13's ``run_decompositions`` collects the functional CIA ops
    twice, and each collection repeats ``torch._export.utils._materialize_cpp_cia_ops``
    (every CIA registration, looked up again) for each op namespace: ~50 times a
    call with the 27 namespaces a worker loads, about a third of a small program's
    lowering (``benchmarks/scripts/stablehlo.py``). The C++ registrations do not change
    while one call runs (it adds Python kernels only), so the first answer serves
    the rest. A torch without that function is left as it is."""
    from torch._export import utils

    materialize = getattr(utils, "_materialize_cpp_cia_ops", None)
    if materialize is None:
        yield
        return
    done = False

    def once() -> None:
        nonlocal done
        if not done:
            materialize()
            done = True

    utils._materialize_cpp_cia_ops = once
    try:
        yield
    finally:
        utils._materialize_cpp_cia_ops = materialize


def lower_graph(ctx: LoweringContext, gm, env: dict[str, object], outputs=None) -> list[Value]:
    """Lower the nodes of ``gm`` (placeholders already in ``env``) at the current
    insertion point; returns the output Values (``outputs(node, vals)`` shapes
    them; default: the flattened output tuple). Higher-order ops lower their
    subgraphs (``get_attr`` nodes) through this, inside their regions."""
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if node.name not in env:
                raise LoweringError(f"subgraph placeholder {node.name} has no value", op="placeholder", node=node.name)
        elif node.op == "get_attr":
            env[node.name] = getattr(gm, node.target)
        elif node.op == "call_function":
            env[node.name] = _call(ctx, node, env)
        elif node.op == "output":
            vals = torch.fx.node.map_arg(node.args[0], lambda n: env[n.name])
            return outputs(node, vals) if outputs is not None else list(vals)
        else:
            raise LoweringError(f"unsupported fx node kind {node.op} ({node.name})", op=node.op, node=node.name)
    raise LoweringError("graph has no output node")


def _subgraph(ctx: LoweringContext, gm, values) -> list[Value]:
    """A higher-order op's subgraph on ``values`` (its placeholders in order), at the insertion point."""
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    if len(names) != len(values):
        raise LoweringError(f"subgraph takes {len(names)} inputs, got {len(values)}")
    return lower_graph(ctx, gm, dict(zip(names, values, strict=False)))


def _call(ctx: LoweringContext, node, env):
    """One ``call_function`` node through the registry; the one place that adds node context to errors."""
    fn = LOWERINGS.get(node.target)
    opname = target_name(node.target)
    if fn is None:
        raise LoweringError(
            f"no StableHLO lowering for aten op {opname} (graph node %{node.name}: {node.format_node()})",
            op=opname,
            node=node.name,
        )
    a = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
    kw = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
    try:
        with ctx.at(node):
            res = _empty(ctx, node)
            if res is None:
                reached(node.target)
                res = fn(ctx, node, *a, **kw)
                _taint(ctx, node)
            val = node.meta.get("val")
            if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)) and isinstance(res, Value):
                res = Value(res.name, res.sym_shape, res.dtype, is_sym=True)
                if isinstance(val, torch.SymInt):
                    _bind(ctx, val, res)
    except LoweringError as e:
        if e.node is None:
            e.node, e.op = node.name, opname
        raise
    except Exception as e:  # one place adds the node context
        raise LoweringError(
            f"While lowering %{node.name} = {opname}(...) [{node.format_node()}]: {type(e).__name__}: {e}",
            op=opname,
            node=node.name,
        ) from e
    return res


def _taint(ctx, node) -> None:
    """Add to ``ctx.item_symbols`` the fresh sizes of a node computed from one (``x[: t.item()]``
    is ``u1 = min(s, u0)`` rows): sizes read from tensor data too (``ops.symint``)."""
    data = getattr(ctx, "item_symbols", None)
    if not data or not any(
        {s.name for s in getattr(getattr(getattr(a, "meta", {}).get("val"), "node", None), "expr", sympy.S.Zero).free_symbols}
        & data
        for a in node.all_input_nodes
    ):
        return
    val = node.meta.get("val")
    for t in val if isinstance(val, (list, tuple)) else [val]:
        for d in getattr(t, "shape", ()):
            expr = getattr(getattr(d, "node", None), "expr", None)
            data |= {s.name for s in getattr(expr, "free_symbols", ()) if s.name.startswith("u")}


def _empty(ctx, node):
    """An op whose one tensor result has a static 0 dim holds no element: it lowers
    as a broadcast zero of its shape, whatever the op (XLA's dynamic padder fails
    its internal checks on some ops over a 0-element tensor with bounded dims)."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or 0 not in [d for d in val.shape if isinstance(d, int)]:
        return None
    if val.dtype.is_complex or val.dtype not in T.TORCH_TO_MLIR:
        return None
    return ctx.constant(0, T.mlir_dtype(val.dtype), tuple(as_dim(d) for d in val.shape))


def _bind(ctx, val, res) -> None:
    try:
        ctx.sym.bind(val, res)
    except sizes.SizeError:
        pass  # a size outside the algebra (e.g. a float power): only its node's value is known


def _arguments(ctx: LoweringContext, ep, env, params: str) -> list[tuple[str, Value]]:
    """@main's arguments (user inputs first: their dims are the symbols' sources),
    and the lifted inputs inlined as constants unless ``params == "args"``."""
    lifted = {s.arg.name: s for s in ep.graph_signature.input_specs if s.kind.name != "USER_INPUT"}
    tokens = {name for name, s in lifted.items() if s.kind.name == "TOKEN"}
    placeholders = [n for n in ep.graph_module.graph.nodes if n.op == "placeholder"]
    for n in placeholders:
        if n.name in tokens:  # an effect token (with_effects): no argument, no constant
            env[n.name] = EffectToken()
    placeholders = [n for n in placeholders if n.name not in tokens]
    args = []
    for i, n in enumerate([n for n in placeholders if n.name not in lifted] if params == "inline" else placeholders):
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            v = Value(f"%arg{i}", tuple(as_dim(d) for d in val.shape), T.mlir_dtype(val.dtype))
        elif isinstance(val, (torch.SymInt, int, float, bool)):
            # a Python scalar input: a 0-d argument (int -> i64, float -> f64, bool -> i1); a
            # SymInt one is also the source of its size symbol
            dt = "i1" if isinstance(val, bool) else "f64" if isinstance(val, float) else "i64"
            v = Value(f"%arg{i}", (), dt, is_sym=True)
            if isinstance(val, torch.SymInt):
                ctx.sym.register_scalar(val, v, n.name)
        else:
            raise LoweringError(f"unsupported placeholder {n.name}: {val!r}", op="placeholder", node=n.name)
        env[n.name] = v
        args.append((n.name, v))
        ctx.sym.register_input(v)
    if params == "inline":
        for n in placeholders:
            if n.name not in lifted:
                continue
            arr = _lifted_value(ep, lifted[n.name])
            if not isinstance(arr, torch.Tensor):
                raise LoweringError(f"unsupported lifted input {n.name} ({type(arr).__name__})", op="placeholder", node=n.name)
            with ctx.at(n):
                a = arr.detach().cpu()
                npv = a.float().numpy() if a.dtype == torch.bfloat16 else a.numpy()
                env[n.name] = ctx.dense_constant(npv, T.mlir_dtype(a.dtype))
    return args


def _outputs(ctx: LoweringContext, ep, node, vals) -> list[Value]:
    """The user outputs as Values (SymInts widened to i64, SymFloats f64, Python numbers as constants)."""
    outputs = []
    for spec, v in zip(ep.graph_signature.output_specs, vals, strict=False):
        if spec.kind.name != "USER_OUTPUT":
            continue  # buffer mutations etc. are not results of the pure function
        with ctx.at(node):
            if isinstance(v, Value):
                outputs.append(
                    ctx.convert(v, "i64" if v.dtype.startswith("i") and v.dtype != "i1" else v.dtype) if v.is_sym else v
                )
            elif isinstance(v, (int, float, bool)):
                dt = "i1" if isinstance(v, bool) else "i64" if isinstance(v, int) else "f32"
                outputs.append(ctx.constant(v, dt))
            else:
                raise LoweringError(f"unsupported output {v!r}", op="output", node=node.name)
    return outputs


def _lifted_value(ep, spec):
    target = spec.target
    if spec.kind.name in ("PARAMETER", "BUFFER") and target in ep.state_dict:
        return ep.state_dict[target]
    if target in getattr(ep, "constants", {}):
        return ep.constants[target]
    raise KeyError(f"no value for lifted input {spec.arg.name} (target {target})")


def param_arrays(ep) -> list[np.ndarray]:
    """Values of the lifted inputs, in ``params="args"`` order (after decompositions)."""
    ep = decomposed(ep)
    out = []
    for s in ep.graph_signature.input_specs:
        if s.kind.name not in ("USER_INPUT", "TOKEN"):
            out.append(_lifted_value(ep, s).detach().cpu().numpy())
    return out


#: the argument attribute naming each dim's size symbol ("" for a static or derived
#: dim): dims with one name have one size, and the bounded executor passes it once
DIM_SYMBOLS = "dynshape.dim_symbols"


def _dim_symbols(v: Value) -> str:
    names = []
    for d in v.sym_shape:
        a = d.single_atom() if isinstance(d, sizes.Expr) else None
        names.append(a.name if a is not None and a.kind == "var" and d == sizes.var(a.name) else "")
    if not any(names):
        return ""
    return " {" + DIM_SYMBOLS + " = [" + ", ".join(f'"{n}"' for n in names) + "]}"


def _assemble(ctx: LoweringContext, args, outputs) -> str:
    body = ctx._buffers[0]
    arg_sig = ", ".join(f'{v.name}: {ctx.type_of(v)}{_dim_symbols(v)} loc("{name}")' for name, v in args)
    res_types = [str(ctx.type_of(v)) for v in outputs]
    ret = '"func.return"(' + ", ".join(v.name for v in outputs) + ") : (" + ", ".join(res_types) + ') -> () loc("output")'
    lines = ["module @dynshape {", f"  func.func public @main({arg_sig}) -> ({', '.join(res_types)}) {{"]
    lines += ["    " + l.replace("\n", "\n    ") for l in body]
    lines += ["    " + ret, "  }", "}"]
    return "\n".join(lines)
