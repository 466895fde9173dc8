"""``onnxruntime``: ``torch.onnx.export(..., dynamo=True, dynamic_shapes=...)`` of
the case's torch form, then one ``onnxruntime.InferenceSession`` (CPU execution
provider) whose inputs keep the dims symbolic. Static mode: the same one export,
and a session per input shape with every symbolic dim fixed by
``SessionOptions.add_free_dimension_override_by_name`` (ORT's own static
variant). ONNX has no dim bounds: no bounded mode.

Underneath: the CPU execution provider creates its kernels once per session
(at ``InferenceSession``); at a new input shape it re-runs shape inference and
allocates, but compiles nothing (no JIT on CPU), so the ``session`` count is
the whole of ORT's compile work."""

from __future__ import annotations

from ..base import Counter, LeftOut
from .common import Peer, PeerProgram, dim_spec, export_reason, shapes_of, threads


def onnx_export(fn, host, spec):
    """An ONNX model (bytes) of ``fn`` exported at the NumPy inputs ``host``
    with the dims of ``spec`` (:func:`dim_spec`; ``None``: static)."""
    import torch

    from engines.torch_export_tools import export_sample, torch_dims

    class Program(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)

    args = [torch.from_numpy(a) for a in host]
    shapes = None
    if spec is not None:
        args = export_sample(args, spec)
        shapes = (tuple(torch_dims(spec)),)
    program = torch.onnx.export(Program().eval(), tuple(args), dynamic_shapes=shapes, dynamo=True, verbose=False)
    return program.model_proto.SerializeToString()


def session(model: bytes, fixed: dict[str, int] | None = None):
    """An ``InferenceSession`` on the CPU provider; ``fixed``: symbolic dim name -> size."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    if threads():
        opts.intra_op_num_threads = threads()
    for name, size in (fixed or {}).items():
        opts.add_free_dimension_override_by_name(name, size)
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def symbolic_sizes(model: bytes, host) -> dict[str, int]:
    """``{symbolic dim name: size}`` of the model's graph inputs at the arrays ``host``."""
    import onnx

    out = {}
    graph = onnx.load_model_from_string(model).graph
    for inp, a in zip(graph.input, host, strict=False):
        for axis, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.dim_param:
                out[d.dim_param] = int(a.shape[axis])
    return out


def runner(sess):
    """The call: the session on the inputs in order, its first output."""
    names = [i.name for i in sess.get_inputs()]

    def run(*args):
        return sess.run(None, dict(zip(names, args, strict=False)))[0]

    return run


class OrtProgram(PeerProgram):
    """One export, a session per program (static: per input shape)."""

    def build(self, host):
        if "model" not in self.shared:  # static mode too: one export with the case's dims symbolic
            spec = dim_spec(self.case, "unbounded")
            dynamic = any(spec)
            with self.counting("onnx_export", export_reason(self.case, "unbounded" if dynamic else "static", host)):
                self.shared["model"] = onnx_export(self.fn, host, spec if dynamic else None)
        fixed = symbolic_sizes(self.shared["model"], host) if self.mode == "static" else {}
        why = f"InferenceSession at {shapes_of(host)}" + (f", dims fixed to {fixed}" if fixed else ", dims symbolic")
        with self.counting("session", why):
            sess = session(self.shared["model"], fixed)
        return runner(sess)


class OnnxRuntime(Peer):
    name = "onnxruntime"
    modes = ("static", "unbounded")
    requires = ("torch", "onnx", "onnxscript", "onnxruntime")
    counters = {
        "onnx_export": Counter("instrumented", "torch.onnx.export(dynamo=True) calls (each runs its own torch.export)"),
        "session": Counter("instrumented", "onnxruntime.InferenceSession constructions (graph optimisation + kernel creation)"),
    }
    compile_scope = (
        "torch.onnx.export once (torch.export + ONNX translation + optimisation: 'onnx_export') and one InferenceSession "
        "per program (unbounded: once; static: per input shape, dims fixed by free-dimension overrides: 'session')"
    )
    program = OrtProgram
    # `make run` names it (RUN_FLAGS): in the quick profile it runs the two reports' cases
    # (harness/profiles.py CORE, which every profile runs), 8 jobs of 4-17 s each on the loaded
    # 2-core machine; `--whole-matrix` or the full profile runs the rest of the catalogue
    quick_leaves_out = (
        LeftOut("*", "*", "ONNX Runtime runs the reports' cases in the quick profile (a torch.onnx.export + session per job)"),
    )
