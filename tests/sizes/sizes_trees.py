"""Random expression trees for the size-algebra property tests.

A tree is ``("const", c)``, ``("var", name)``, ``("neg", x)``,
``(op, left, right)`` for ``op`` in ``+ - * // %``, or ``("max"|"min", args)``.
It is evaluated here with plain Python semantics -- independently of
engines.sizes -- and rendered as text, through the algebra's constructors,
and (in the sympy tests) as sympy.
"""

from hypothesis import strategies as st

from engines import sizes as S

VARS = ("a", "b", "c")
BINOPS = ("+", "-", "*", "//", "%")

leaves = st.one_of(
    st.integers(-6, 7).map(lambda c: ("const", c)),
    st.sampled_from(VARS).map(lambda v: ("var", v)),
)


def _extend(sub):
    return st.one_of(
        st.tuples(st.sampled_from(BINOPS), sub, sub),
        st.tuples(st.just("neg"), sub),
        st.tuples(st.sampled_from(("max", "min")), st.lists(sub, min_size=1, max_size=3).map(tuple)),
    )


trees = st.recursive(leaves, _extend, max_leaves=10)
small_trees = st.recursive(leaves, _extend, max_leaves=6)
envs = st.fixed_dictionaries({v: st.integers(-25, 25) for v in VARS})
size_envs = st.fixed_dictionaries({v: st.integers(0, 30) for v in VARS})

_PY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
}


def py_eval(t, env):
    """Python's value of the tree (raises ZeroDivisionError like Python)."""
    k = t[0]
    if k == "const":
        return t[1]
    if k == "var":
        return env[t[1]]
    if k == "neg":
        return -py_eval(t[1], env)
    if k in ("max", "min"):
        return (max if k == "max" else min)(py_eval(x, env) for x in t[1])
    left, right = py_eval(t[1], env), py_eval(t[2], env)
    return _PY[k](left, right)


def text(t) -> str:
    """Fully bracketed source text of the tree."""
    k = t[0]
    if k == "const":
        return f"({t[1]})" if t[1] < 0 else str(t[1])
    if k == "var":
        return t[1]
    if k == "neg":
        return f"(-{text(t[1])})"
    if k in ("max", "min"):
        return f"{k}({', '.join(text(x) for x in t[1])})"
    return f"({text(t[1])} {k} {text(t[2])})"


def build(t) -> S.Expr:
    """The tree through the algebra's constructors and operators."""
    k = t[0]
    if k == "const":
        return S.const(t[1])
    if k == "var":
        return S.var(t[1])
    if k == "neg":
        return -build(t[1])
    if k in ("max", "min"):
        return (S.smax if k == "max" else S.smin)(*(build(x) for x in t[1]))
    left, right = build(t[1]), build(t[2])
    return _PY[k](left, right)


def has_symbolic_divisor(t) -> bool:
    """Some ``//``/``%`` in the tree divides by a subtree that has a variable."""
    k = t[0]
    if k in ("const", "var"):
        return False
    if k == "neg":
        return has_symbolic_divisor(t[1])
    if k in ("max", "min"):
        return any(has_symbolic_divisor(x) for x in t[1])
    return (k in ("//", "%") and has_var(t[2])) or has_symbolic_divisor(t[1]) or has_symbolic_divisor(t[2])


def has_var(t) -> bool:
    k = t[0]
    if k == "var":
        return True
    if k == "const":
        return False
    if k == "neg":
        return has_var(t[1])
    if k in ("max", "min"):
        return any(has_var(x) for x in t[1])
    return has_var(t[1]) or has_var(t[2])


def outcome(fn):
    """``("ok", value)`` or ``("zero", None)`` for a division by zero."""
    try:
        return "ok", fn()
    except ZeroDivisionError:
        return "zero", None
