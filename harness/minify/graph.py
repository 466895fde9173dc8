"""The exported graph a failing job is cut down from, and its reduced programs.

:class:`Source` is a case's torch program exported as a backend exports it
(``torch.export`` with the case's ``Dim``s, :func:`backends.torch_export.export`),
unlifted (``ep.module()``: weights as ``get_attr``). A reduced program
(:class:`Cut`) is a backward slice of that graph: an **output** node, and the
**cut** nodes whose values become inputs of their own (fed with the values the
original program computes there, so indices stay in range and data-dependent
sizes stay what they were). :meth:`Source.program` builds it as a new
``GraphModule`` and :meth:`Source.case` as a :class:`cases.Case` any backend
runs: same dims, same sweep, inputs drawn by running the original program on
the original case's inputs; its oracle is torch eager on the reduced program.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

#: nodes that compute nothing a backend lowers (they stay out of every slice and every count)
INERT = ("placeholder", "output", "call_module")


@dataclasses.dataclass(frozen=True)
class Cut:
    """A reduced program: the slice of the graph that ``output`` needs, stopped at ``cuts``."""

    output: str
    cuts: frozenset[str] = frozenset()


class Source:
    """``case``'s torch program exported in ``mode`` at the sizes ``sizes``."""

    def __init__(self, case, mode: str, sizes: dict[str, int]):
        import torch

        from engines.torch_export_tools import export_oblivious_retry, export_sample, export_spec, torch_dims

        self.case, self.mode = case, mode
        host = [torch.from_numpy(np.ascontiguousarray(a)) for a in case.make_inputs(sizes, seed=0)]
        spec = export_spec(case.dynamic_axes(mode))
        sample = export_sample(host, spec)
        fn = case.torch_fn()

        class Program(torch.nn.Module):
            def forward(self, *xs):
                return fn(*xs)

        # exported as our lowering paths export (the size-oblivious retry), from the one export spec
        shapes = (tuple(torch_dims(spec)),)
        ep = export_oblivious_retry(
            lambda **o: torch.export.export(Program(), tuple(sample), dynamic_shapes=shapes, strict=False, **o)
        )
        self.gm = ep.module()
        self.nodes = {n.name: n for n in self.gm.graph.nodes}
        self.order = {n.name: i for i, n in enumerate(self.gm.graph.nodes)}
        self.placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        #: the export's size symbols by the case's dim names (a placeholder's axis is its input's axis)
        self.symbols: dict[str, str] = {}
        for node, inp in zip(self.placeholders, case.inputs, strict=False):
            for size, ax in zip(node.meta["val"].shape, inp.shape, strict=False):
                if isinstance(size, torch.SymInt) and isinstance(ax, str):
                    self.symbols.setdefault(str(size.node.expr), ax)

    # -- the graph ---------------------------------------------------------------
    def final_output(self) -> str:
        """The program's (first) output node."""
        out = next(n for n in self.gm.graph.nodes if n.op == "output")
        first = out.args[0][0] if isinstance(out.args[0], (tuple, list)) else out.args[0]
        return first.name

    def ops(self, names: Iterable[str]) -> int:
        """How many of ``names`` compute something (``call_function``): the size of a program."""
        return sum(1 for n in names if self.nodes[n].op == "call_function")

    def is_tensor(self, name: str) -> bool:
        import torch

        return isinstance(self.nodes[name].meta.get("val"), torch.Tensor)

    def shape_names(self, name: str) -> tuple[str | int, ...] | None:
        """The node's shape over the case's dim names, or None where an axis is a size
        expression (``2*s0``) no dim names, or the value is not an array NumPy holds."""
        import torch

        val = self.nodes[name].meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dtype in (torch.bfloat16, torch.complex32):
            return None
        out: list[str | int] = []
        for size in val.shape:
            if isinstance(size, torch.SymInt):
                dim = self.symbols.get(str(size.node.expr))
                if dim is None:
                    return None
                out.append(dim)
            else:
                out.append(int(size))
        return tuple(out)

    def cuttable(self, name: str) -> bool:
        """Whether the node's value can be an input of a reduced program."""
        return self.nodes[name].op == "call_function" and self.shape_names(name) is not None

    def slice(self, cut: Cut) -> tuple[list[str], list[str]]:
        """``(inputs, body)`` of ``cut``'s program in graph order: the original
        placeholders and cut nodes it reads, and the nodes it computes."""
        inputs: set[str] = set()
        body: set[str] = set()
        todo = [cut.output]
        while todo:
            name = todo.pop()
            node = self.nodes[name]
            if name in body or name in inputs:
                continue
            if node.op == "placeholder" or (name in cut.cuts and name != cut.output):
                inputs.add(name)
                continue
            body.add(name)
            todo.extend(n.name for n in node.all_input_nodes)
        key = self.order.__getitem__
        return sorted(inputs, key=key), sorted(body, key=key)

    def ancestors(self, name: str) -> list[str]:
        """Tensor-valued nodes ``name`` reads, directly or not, in graph order (its own slice)."""
        _, body = self.slice(Cut(name))
        return [n for n in body if n != name and self.nodes[n].op == "call_function" and self.is_tensor(n)]

    def levels(self, output: str) -> list[list[str]]:
        """The slice of ``output`` by distance from it: level d holds the nodes first met d edges back."""
        seen = {output}
        level = [output]
        out = []
        while level:
            nxt = []
            for name in level:
                for n in self.nodes[name].all_input_nodes:
                    if n.name not in seen and n.op == "call_function":
                        seen.add(n.name)
                        nxt.append(n.name)
            if nxt:
                out.append(nxt)
            level = nxt
        return out

    # -- the reduced program -----------------------------------------------------
    def program(self, cut: Cut):
        """``cut``'s program as a ``GraphModule`` (its inputs: :meth:`slice`'s, in order)."""
        import torch
        import torch.fx as fx

        inputs, body = self.slice(cut)
        graph = fx.Graph()
        env: dict[Any, Any] = {}
        writes = self.written(body)
        for name in inputs:
            ph = graph.placeholder(name)
            ph.meta = dict(self.nodes[name].meta)
            # an input an in-place op (scatter_add_) writes is cloned first: a program that
            # mutates its input returns it as an output of its own, which is another program
            env[self.nodes[name]] = graph.call_function(torch.ops.aten.clone.default, (ph,)) if name in writes else ph
        for name in body:
            node = self.nodes[name]
            env[node] = graph.node_copy(node, lambda n: env[n])
        graph.output(env[self.nodes[cut.output]])
        graph.eliminate_dead_code()
        return fx.GraphModule(self.gm, graph)

    def written(self, body: list[str]) -> set[str]:
        """The nodes an in-place op among ``body`` writes (its schema's mutable arguments)."""
        out: set[str] = set()
        for name in body:
            node = self.nodes[name]
            schema = getattr(node.target, "_schema", None)
            if schema is None:
                continue
            for arg, value in zip(schema.arguments, node.args, strict=False):
                if arg.alias_info is not None and arg.alias_info.is_write and hasattr(value, "name"):
                    out.add(value.name)
        return out

    def values(self, arrays: list[np.ndarray], names: list[str]) -> list[np.ndarray]:
        """The values of nodes ``names`` when the original program runs on ``arrays``."""
        import torch
        import torch.fx as fx

        want = set(names)
        got: dict[str, Any] = {}

        class Capture(fx.Interpreter):
            def run_node(self, n):
                out = super().run_node(n)
                if n.name in want:  # a copy: a later in-place op (scatter_add_) would change it
                    got[n.name] = out.clone() if isinstance(out, torch.Tensor) else out
                return out

        with torch.no_grad():
            Capture(self.gm).run(*[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        return [np.ascontiguousarray(got[n].detach().numpy()) for n in names]

    def reduced_case(self, cut: Cut):
        """``cut``'s program as a case of its own (see the module docstring)."""
        import torch

        from cases.model import Input

        inputs, _ = self.slice(cut)
        program = self.program(cut)
        specs = []
        for name in inputs:
            val = self.nodes[name].meta["val"]
            shape = self.shape_names(name)
            assert shape is not None, f"{name} is not an input a case can hold"
            specs.append(Input(name, shape, str(val.dtype).removeprefix("torch.")))
        out = self.nodes[cut.output].meta["val"]
        original = self.case

        def inputs_fn(sizes, rng):
            dynamic = {d.name: sizes[d.name] for d in original.dims if d.dynamic}
            return self.values(original.make_inputs(dynamic, seed=int(rng.integers(2**31))), inputs)

        def reference(*promoted):
            # the oracle: torch eager on the reduced program, in the inputs' own dtypes
            args = [
                torch.from_numpy(np.ascontiguousarray(a.astype(s.dtype, copy=False)))
                for a, s in zip(promoted, specs, strict=True)
            ]
            with torch.no_grad():
                return program(*args).detach().numpy()

        return dataclasses.replace(
            original,
            name=f"{original.name}__minified",
            tags=("minified",),
            inputs=tuple(specs),
            oracle=reference,
            out_shape=(),
            out_dtype=str(out.dtype).removeprefix("torch."),
            torch_fn=lambda: program,
            jax_fn=None,
            einx=None,
            inputs_fn=inputs_fn,
            tolerance=original.tol(),
            constraints=(),
        )
