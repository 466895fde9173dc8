"""``openvino``: ``openvino.convert_model`` of the case's ``torch.export``
program, with ``input=`` a ``PartialShape`` per input (``-1`` for an unbounded
dim, ``Dimension(lo, hi)`` for a bounded one, the size of a static one), then
one ``Core.compile_model`` on the CPU plugin. Static mode: the same converted
model, ``Model.reshape`` to each new input shape and a ``compile_model`` per
shape (OpenVINO's static-shape use).

Underneath: with dynamic dims the CPU plugin infers shapes and makes oneDNN
primitives for each new input shape at the call, cached in its runtime cache
(``CPU_RUNTIME_CACHE_CAPACITY``); OpenVINO exposes no count of those, so they are
not counted: the ``compile_model`` count is what it reports as compiles."""

from __future__ import annotations

from ..base import Counter
from .common import EXPORT, Peer, PeerProgram, export_program, export_reason, threads


def partial_shapes(case, mode: str, host):
    """One ``openvino.PartialShape`` per input of ``case`` in ``mode`` at the arrays ``host``."""
    import openvino as ov

    out = []
    for a, axes in zip(host, case.dynamic_axes(mode), strict=False):
        dims = []
        for axis, n in enumerate(a.shape):
            d = axes.get(axis) if mode != "static" else None
            if d is None:
                dims.append(ov.Dimension(int(n)))
            elif d.max is not None:
                dims.append(ov.Dimension(max(1, d.min), d.max))
            else:
                dims.append(ov.Dimension(-1))
        out.append(ov.PartialShape(dims))
    return out


def convert(ep, shapes):
    """``openvino.convert_model`` of an ExportedProgram with the input shapes ``shapes``."""
    import openvino as ov

    return ov.convert_model(ep, input=shapes)


#: the CPU plugin's inference precision: f32, as every other system computes. Left to its
#: default, OpenVINO runs matmuls and convolutions in bf16 on a CPU with AVX512-BF16 or AMX
#: (its documented INFERENCE_PRECISION_HINT default there), and the f32 oracle fails them
PRECISION = "f32"


def compile_cpu(model):
    """``Core.compile_model`` on the CPU plugin at f32 (:data:`PRECISION`); the call's
    infer request (``run.compiled``: the compiled model)."""
    import openvino as ov

    config = {"INFERENCE_PRECISION_HINT": PRECISION}
    if threads():
        config["INFERENCE_NUM_THREADS"] = threads()
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()

    def run(*args):
        return request.infer(list(args), share_inputs=True)[compiled.output(0)]

    run.compiled = compiled  # type: ignore[attr-defined]
    return run


class OvProgram(PeerProgram):
    """One export; a converted model compiled once (static: reshaped and compiled per input shape)."""

    def build(self, host):
        import openvino as ov

        case, mode = self.case, self.mode
        if "ep" not in self.shared:  # static mode too: one export, its dims dynamic
            dynamic = "unbounded" if mode == "static" else mode
            with self.counting("export", export_reason(case, dynamic, host)):
                self.shared["ep"] = export_program(case, dynamic, self.fn, host)
        shapes = partial_shapes(case, mode, host)
        why = f"compile_model for input shapes {[str(s) for s in shapes]}"
        with self.counting("compile_model", why):
            if mode == "static":
                model = self.shared.get("model")
                if model is None:
                    model = self.shared["model"] = convert(self.shared["ep"], partial_shapes(case, "unbounded", host))
                model.reshape({model.input(i): ov.PartialShape(s) for i, s in enumerate(shapes)})
            else:
                model = convert(self.shared["ep"], shapes)
            return compile_cpu(model)


class OpenVino(Peer):
    name = "openvino"
    modes = ("static", "bounded", "unbounded")
    requires = ("torch", "openvino")
    counters = {
        "export": EXPORT,
        "compile_model": Counter(
            "instrumented",
            "openvino.convert_model + Core.compile_model on CPU (per program: once with dynamic dims, per shape in static mode)",
        ),
    }
    compile_scope = (
        "torch.export once ('export'); openvino.convert_model + Core.compile_model ('compile_model': once with dynamic "
        "or bounded dims, per input shape in static mode after Model.reshape); the CPU plugin's per-shape primitive "
        "creation at the call is not visible"
    )
    program = OvProgram
