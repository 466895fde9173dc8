"""One tiny adapter per array library: how each primitive is spelled in generated code.

Adapters only produce *source text*; the generated function imports nothing
else.  Sizes arrive as source text too (``engines.sizes.source``), read at run time.
"""

import sys as _sys

import numpy as _np

from .semantics import ELEMENTWISE


def _tup(xs):
    xs = list(xs)
    return "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"


class Adapter:
    name = None
    module = None  # name the library is bound to in generated code
    permute = None  # the function that permutes axes (``transpose(v, perm)``)
    ops = {}
    reduce_ops = {}

    def reshape(self, v, shape):
        return f"{self.module}.reshape({v}, {_tup(shape)})"

    def transpose(self, v, perm):
        return f"{self.permute}({v}, {_tup(map(str, perm))})"

    def broadcast_to(self, v, shape):
        return f"{self.module}.broadcast_to({v}, {_tup(shape)})"

    def split(self, v, sizes, axis):
        cum, acc = [], None
        for s in sizes[:-1]:
            acc = s if acc is None else f"{acc} + {s}"
            cum.append(acc)
        return f"{self.module}.split({v}, [{', '.join(cum)}], axis={axis})"

    def concat(self, vs, axis):
        return f"{self.module}.concatenate([{', '.join(vs)}], axis={axis})"

    def stack(self, vs, axis):
        return f"{self.module}.stack([{', '.join(vs)}], axis={axis})"

    def diagonal(self, v, i, j):
        return f"{self.module}.diagonal({v}, 0, {i}, {j})"

    def einsum(self, spec, vs):
        return f"{self.module}.einsum({spec!r}, {', '.join(vs)})"

    def arange(self, n, like):
        return f"{self.module}.arange({n}, dtype={like}.dtype)"

    def flat_take(self, x, idx):
        return f"{x}[{idx}]"

    def call(self, op, args, axes=None, **kw):
        f = self.ops[op]
        if isinstance(f, str) and "{" not in f:
            f = f + "({args}{axes}{kw})"
        a = ", ".join(args)
        ax = "" if axes is None else f", axis={_axis(axes)}"
        k = "".join(f", {n}={v}" for n, v in kw.items())
        return f.format(
            args=a,
            axes=ax,
            kw=k,
            x=args[0] if args else None,
            ax=_axis(axes) if axes is not None else None,
            m=self.module,
            dims=_tup(map(str, axes)) if axes is not None else None,
        )


def _axis(axes):
    axes = tuple(axes)
    return str(axes[0]) if len(axes) == 1 else _tup(map(str, axes)) if axes else "()"


#: the elementwise ops spelled ``lib.<name>`` (``where``, spelled so too, is listed with each adapter's own names)
_ELEMENTWISE = [n for n in ELEMENTWISE if n != "where"]


class Torch(Adapter):
    name, module, permute = "torch", "torch", "torch.permute"
    ops = {
        **{n: f"torch.{n}" for n in _ELEMENTWISE},
        "equal": "torch.eq",
        "not_equal": "torch.ne",
        "where": "torch.where",
        "sum": "torch.sum({x}, dim={ax})",
        "mean": "torch.mean({x}, dim={ax})",
        "var": "torch.var({x}, dim={ax})",
        "std": "torch.std({x}, dim={ax})",
        "prod": "torch.prod({x}, dim={ax})",
        "count_nonzero": "torch.count_nonzero({x}, dim={ax})",
        "any": "torch.any({x}, dim={ax})",
        "all": "torch.all({x}, dim={ax})",
        "max": "torch.amax({x}, dim={ax})",
        "min": "torch.amin({x}, dim={ax})",
        "logsumexp": "torch.logsumexp({x}, dim={dims})",
        "argmax": "torch.argmax({x}, dim={ax})",
        "argmin": "torch.argmin({x}, dim={ax})",
        "sort": "torch.sort({x}, dim={ax})",
        "argsort": "torch.argsort({x}, dim={ax})",
        "flip": "torch.flip({x}, dims={dims})",
        "softmax1": "torch.nn.functional.softmax({x}, dim={ax})",
        "log_softmax1": "torch.nn.functional.log_softmax({x}, dim={ax})",
        "exp": "torch.exp",
        "log": "torch.log",
        "neg": "torch.neg",
        "keepmax": "torch.amax({x}, dim={dims}, keepdim=True)",
        "keepsum": "torch.sum({x}, dim={dims}, keepdim=True)",
        "detach": "{x}.detach()",
    }
    scalar_ok = {"add", "subtract", "multiply", "true_divide", "floor_divide", "divide"}

    def unsqueeze(self, v, k):
        # method form: same op as torch.unsqueeze, cheaper to dispatch and to compile
        return f"{v}.unsqueeze({k})"

    # binary ops spelled as Python operators when the left operand is a tensor
    # (Tensor.__add__ etc. dispatch to the same aten ops as torch.add etc.)
    binop = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "true_divide": "/"}

    def split(self, v, sizes, axis):
        return f"torch.split({v}, [{', '.join(sizes)}], dim={axis})"

    def concat(self, vs, axis):
        return f"torch.cat([{', '.join(vs)}], dim={axis})"

    def stack(self, vs, axis):
        return f"torch.stack([{', '.join(vs)}], dim={axis})"

    def roll(self, v, shift, axes):
        return f"torch.roll({v}, shifts={_tup(map(str, shift))}, dims={_tup(map(str, axes))})"

    def arange(self, n, like):
        return f"torch.arange({n}, dtype={like}.dtype, device={like}.device)"

    def to_array(self, v):
        return f"torch.asarray({v})"


class Numpy(Adapter):
    name, module, permute = "numpy", "np", "np.transpose"
    ops = {
        **{n: f"np.{n}" for n in _ELEMENTWISE},
        "where": "np.where",
        "exp": "np.exp",
        "log": "np.log",
        "neg": "np.negative",
        **{
            n: f"np.{n}({{x}}, axis={{ax}})"
            for n in [
                "sum",
                "mean",
                "var",
                "std",
                "prod",
                "count_nonzero",
                "any",
                "all",
                "max",
                "min",
                "argmax",
                "argmin",
                "sort",
                "argsort",
                "flip",
            ]
        },
        "keepmax": "np.max({x}, axis={dims}, keepdims=True)",
        "keepsum": "np.sum({x}, axis={dims}, keepdims=True)",
        "detach": "{x}",
    }
    scalar_ok = set()

    def roll(self, v, shift, axes):
        return f"np.roll({v}, {_tup(map(str, shift))}, axis={_tup(map(str, axes))})"

    def to_array(self, v):
        return f"np.asarray({v})"


class Jax(Numpy):
    name, module, permute = "jax", "jnp", "jnp.transpose"
    ops = {
        **Numpy.ops,
        **{k: v.replace("np.", "jnp.") for k, v in Numpy.ops.items()},
        "logsumexp": "jax.nn.logsumexp({x}, axis={ax})",
        "softmax": "jax.nn.softmax({x}, axis={ax})",
        "log_softmax": "jax.nn.log_softmax({x}, axis={ax})",
        "detach": "jax.lax.stop_gradient({x})",
    }
    scalar_ok = set()

    def roll(self, v, shift, axes):
        return f"jnp.roll({v}, {_tup(map(str, shift))}, axis={_tup(map(str, axes))})"

    def to_array(self, v):
        return f"jnp.asarray({v})"


ADAPTERS = {"torch": Torch(), "numpy": Numpy(), "jax": Jax()}


def namespace(name):
    """Globals for generated code of library ``name``."""
    if name == "torch":
        import torch

        return {"torch": torch}
    if name == "jax":
        import jax
        import jax.numpy as jnp

        return {"jax": jax, "jnp": jnp}
    return {"np": _np}


#: the Python and NumPy scalar types an argument may be (library "scalar")
SCALARS = (int, float, bool, _np.integer, _np.floating, _np.bool_)

#: argument class -> library (``library_of``); the classes known up front need no lookup
_TYPES = {_np.ndarray: "numpy"}
if "torch" in _sys.modules:  # already imported (einx imports it): its tensor class is known
    _TYPES[_sys.modules["torch"].Tensor] = "torch"


def library_of(x):
    """'torch' | 'jax' | 'numpy' | 'scalar' | 'factory' (a callable) for one argument."""
    t = type(x)
    r = _TYPES.get(t)
    if r is None:
        mod = t.__module__
        if mod.startswith("torch"):
            r = "torch"
        elif mod.startswith("jax") or mod.startswith("jaxlib"):
            r = "jax"
        elif isinstance(x, _np.ndarray):
            r = "numpy"
        elif isinstance(x, SCALARS):
            r = "scalar"
        elif callable(x):
            r = "factory"  # called with the solved shape (einx's tensor factories)
        else:
            raise ValueError(f"The argument to the einx function has an invalid type: {t}")
        _TYPES[t] = r
    return r
