"""Per-op-family rules of einx 0.4.3: implicit outputs, implicit brackets, bracket checks.

Mirrors ``einx._src.adapter.einx_from_namedtensor._parse_op`` on our trees.
Everything here depends on the description (and op family) only.
"""

from .errors import SemanticError
from .parse import parse
from .tree import (
    Axis,
    Brackets,
    Concat,
    Flat,
    List,
    axes,
    bracket_axes,
    copy,
    el_part,
    has_brackets,
    is_empty,
    nodes,
    remove_brackets,
)

ELEMENTWISE = [
    "add",
    "subtract",
    "multiply",
    "true_divide",
    "floor_divide",
    "divide",
    "logical_and",
    "logical_or",
    "where",
    "maximum",
    "minimum",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "logaddexp",
]
REDUCE = ["sum", "mean", "var", "std", "prod", "count_nonzero", "all", "any", "min", "max", "logsumexp"]
UPDATE_AT = ["set_at", "add_at", "subtract_at"]
PRESERVE = ["flip", "roll", "sort", "argsort", "softmax", "log_softmax"]
ARGFIND = ["argmax", "argmin"]

FAMILY = {
    **{n: "elementwise" for n in ELEMENTWISE},
    **{n: "reduce" for n in REDUCE},
    **{n: "update_at" for n in UPDATE_AT},
    **{n: "preserve" for n in PRESERVE},
    **{n: "argfind" for n in ARGFIND},
    "id": "id",
    "dot": "dot",
    "get_at": "get_at",
}

OUTPUT_AXIS = "output.axis"


def _ord(i):
    return {0: "1st", 1: "2nd", 2: "3rd"}.get(i, f"{i + 1}th")


def _br_pos(e):
    return [p for n in nodes(e) if isinstance(n, Brackets) for p in (n.pos[0], n.pos[1] - 1)]


def _names_pos(exprs, names):
    return [p for e in exprs for a in axes(e) if a.name in names for p in range(*a.pos)]


def _mark(e, names_out):
    """Wrap every axis not in ``names_out`` in brackets (einx's implicit brackets)."""
    if isinstance(e, Axis):
        return Brackets(copy(e), pos=e.pos) if e.name not in names_out else copy(e)
    if isinstance(e, (List, Concat)):
        return type(e)([_mark(c, names_out) for c in e.children], pos=e.pos)
    return type(e)(_mark(e.inner, names_out), pos=e.pos)


def _names(e, marked=None):
    br = {id(a) for a in bracket_axes(e)}
    return [a.name for a in axes(e) if marked is None or (id(a) in br) == marked]


def analyse(desc, op, keepdims=False):
    """Return ``(inputs, outputs)`` trees with implicit outputs and brackets made explicit."""
    fam = FAMILY[op]
    ins, outs = parse(desc)
    ins = [copy(e) for e in ins]
    outs = None if outs is None else [copy(e) for e in outs]
    allexprs = ins + (outs or [])
    if fam != "id" and any(isinstance(n, Concat) for e in allexprs for n in nodes(e)):
        pos = [p for e in allexprs for n in nodes(e) if isinstance(n, Concat) for p in range(*n.pos)]
        raise SemanticError(desc, "The concatenation operator (+) is not allowed in this function.\n%EXPR%", pos)

    el_in = [el_part(e) for e in ins]
    el_op_in, el_op_out = _signature(fam, el_in, ins, outs)
    if len(el_op_in) != len(ins):
        raise SemanticError(desc, f"The operation expects {len(el_op_in)} input expression(s), but found {len(ins)}.\n%EXPR%")
    if outs is not None and len(el_op_out) != len(outs):
        raise SemanticError(desc, f"The operation expects {len(el_op_out)} output expression(s), but found {len(outs)}.\n%EXPR%")
    if outs is None:  # a bracketed number axis of an implied output is a new axis (einx), not the input's
        outs = [_fresh_numbers(e) for e in _implicit_outputs(desc, fam, ins, el_op_in, el_op_out, keepdims)]
    _check_brackets(desc, el_op_in, el_in, ins, el_op_out, outs)
    if fam in ("reduce", "dot") and not any(has_brackets(e) for e in ins):
        ins = _auto_brackets(desc, ins, outs)
    _check_names(desc, op, fam, ins, outs)
    return ins, outs


def _signature(fam, el_in, ins, outs):
    """The elementary operation's signature: per input and output, the axes it takes (its "has dims" flags)."""
    empty = List([])
    if fam == "id":
        el_op_in, el_op_out = [empty] * len(ins), [empty] * (len(ins) if outs is None else len(outs))
    elif fam == "elementwise":
        el_op_in, el_op_out = [empty] * len(ins), [empty]
    elif fam == "reduce":
        el_op_in, el_op_out = [el_in[0]], [empty]
    elif fam in ("dot", "get_at"):
        el_op_in, el_op_out = el_in, [empty]
    elif fam == "update_at":
        el_op_in, el_op_out = el_in[:-1] + [empty], [el_in[0]]
    elif fam == "argfind":
        nonscalar = outs is None or not is_empty(el_part(outs[0]))
        # the coordinate axis: a name no description can spell, so it never
        # equals the user's marked axis (``argmax("[a]", x)``)
        el_op_in, el_op_out = [el_in[0]], [List([Axis(OUTPUT_AXIS)]) if nonscalar else empty]
    else:  # preserve
        el_op_in, el_op_out = [el_in[0]], [el_in[0]]
    return el_op_in, el_op_out


def _implicit_outputs(desc, fam, ins, el_op_in, el_op_out, keepdims):
    """The outputs einx implies for a description without ``->``."""
    no_output = SemanticError(
        desc, "The operation expects an output expression, but no '->' was found.\n%EXPR%", range(len(desc))
    )
    if fam == "update_at":
        return [copy(ins[0])]
    elif len(el_op_in) == 1 and len(el_op_out) == 1 and _same(el_op_in[0], el_op_out[0]):
        return [copy(e) for e in ins]
    elif len(el_op_in) == 1 and len(el_op_out) == 1 and is_empty(el_op_out[0]):
        return [_keepdims(e) for e in ins] if keepdims else [remove_brackets(e, keep_children=False) or List([]) for e in ins]
    elif all(is_empty(c) for c in el_op_in + el_op_out):
        if len(ins) == 1:
            return [copy(ins[0])]
        if fam == "id":
            raise no_output
        return [copy(ins[_unique_parent(desc, ins)])]
    elif len(el_op_in) == 1 and len(el_op_out) == 1:
        e = ins[0]
        nb = sum(isinstance(n, Brackets) for n in nodes(e))
        if nb != 1:
            raise SemanticError(
                desc,
                "The output expression is missing in this operation. The output expression can only be determined "
                "implicitly, if the input expression contains exactly one usage of brackets ([]).\n%EXPR%",
                _br_pos(e),
            )
        return [_replace_brackets(e)]
    else:
        raise no_output


def _unique_parent(desc, ins) -> int:
    """The input that holds every other input's axis names (einx's implicit output), if it is unique."""
    names = [{a.name for a in axes(e) if a.value != 1} for e in ins]  # number axes count, 1s do not
    parents = [i for i, p in enumerate(names) if all(c <= p for j, c in enumerate(names) if j != i)]
    # einx deduplicates structurally-equal candidate expressions (set of expressions), where axes
    # compare by name: two number axes are different axes ("(1), (1)" has no unique output)
    uniq = []
    for i in parents:
        if not any(_struct(ins[i]) == _struct(ins[j]) for j in uniq):
            uniq.append(i)
    if len(uniq) != 1:
        raise SemanticError(
            desc,
            "The output expression is missing in this operation. einx allows implicitly determining the "
            "output expression in this operation according to the rule: If one of the input expressions contains "
            "the axis names of all other input expressions (excluding 1s) and if this choice is unique, then this "
            "expression is used as output expression. However, no unique input expression was found.\n%EXPR%",
        )
    return uniq[0]


def _check_brackets(desc, el_op_in, el_in, ins, el_op_out, outs):
    """Bracket usage must match the elementary operation."""
    el_out = [el_part(e) for e in outs]
    for kind, ops_, subs, exprs in (("input", el_op_in, el_in, ins), ("output", el_op_out, el_out, outs)):
        for i, (o, s, e) in enumerate(zip(ops_, subs, exprs, strict=False)):
            if is_empty(o) and not is_empty(s):
                raise SemanticError(
                    desc,
                    f"Brackets ([]) are not allowed in the {_ord(i)} {kind} expression of this operation.\n%EXPR%",
                    _br_pos(e),
                )
            if not is_empty(o) and is_empty(s):
                raise SemanticError(
                    desc,
                    f"The {_ord(i)} {kind} expression of this operation requires brackets, but no brackets were found.\n%EXPR%",
                    list(range(*e.pos)) if e.pos[0] >= 0 else [],
                )


def _auto_brackets(desc, ins, outs):
    """With no brackets in a reduction or dot: brackets around every axis the output lacks."""
    for e in ins:
        ns = _names(e)
        dup = sorted({n for n in ns if ns.count(n) > 1})
        if dup:
            raise SemanticError(
                desc,
                "If no axes are marked with brackets in this operation, brackets are placed automatically around all "
                "axes that do not appear in the output expression. Since this mode is used here, no axis name may appear "
                "more than once in the same input tensor (to avoid confusion with diagonal extraction). However, the "
                f"following axis names are used more than once: {', '.join(dup)}.\n%EXPR%",
                _names_pos([e], dup),
            )
    out_names = set(_names(outs[0]))
    return [_mark(e, out_names) for e in ins]


def _check_names(desc, op, fam, ins, outs):
    """Axis names that may not repeat (vectorized output axes, a dot's bracketed axes) or may not appear."""
    for e in outs:
        for part in _split_concat(e):
            ns = [a.name for a in axes(part) if id(a) not in {id(b) for b in bracket_axes(part)}]
            dup = {n for n in ns if ns.count(n) > 1}
            if dup:
                raise SemanticError(
                    desc,
                    "The output expression must not contain multiple vectorized axes with the same name (after "
                    "splitting concatenated axes).\n%EXPR%",
                    _names_pos([e], dup),
                )
    if fam == "dot":
        for e in ins + outs:
            ns = _names(e, marked=True)
            dup = {n for n in ns if ns.count(n) > 1}
            if dup:
                raise SemanticError(
                    desc,
                    "The expression must not contain multiple axes with the same name in brackets ([]).\n%EXPR%",
                    _names_pos([e], dup),
                )
    if op == "roll" and "shift" in {a.name for e in ins + outs for a in axes(e)}:
        raise SemanticError(
            desc,
            "The following axis names may not be used in the expression, since they are keyword arguments of the "
            "elementary operation: shift.\n%EXPR%",
            _names_pos(ins + outs, {"shift"}),
        )
    if fam in ("update_at", "preserve"):
        for i, o in zip(ins, outs, strict=False):
            a, b = _names(i, marked=True), _names(o, marked=True)
            if a != b:
                raise SemanticError(
                    desc,
                    "All axes marked with brackets must appear in the same order in the inputs and outputs of this "
                    "operation.\n%EXPR%",
                    _names_pos(ins + outs, set(a) | set(b)),
                )


def _fresh_numbers(e, inside=False):
    if isinstance(e, Axis):
        return Axis(e.name + "'", e.value, e.marked, pos=e.pos) if e.value is not None and inside else copy(e)
    if isinstance(e, (List, Concat)):
        return type(e)([_fresh_numbers(c, inside) for c in e.children], pos=e.pos)
    return type(e)(_fresh_numbers(e.inner, inside or isinstance(e, Brackets)), pos=e.pos)


def _struct(e):
    """``e`` as einx's expressions compare: by structure, axes by name and value."""
    if isinstance(e, Axis):
        return ("ax", e.name, e.value)
    return (type(e).__name__, tuple(_struct(c) for c in (e.children if isinstance(e, (List, Concat)) else [e.inner])))


def _same(a, b):
    return str(a) == str(b)


def _keepdims(e):
    if isinstance(e, Brackets):
        return Flat(List([]))
    if isinstance(e, Axis):
        return copy(e)
    if isinstance(e, (List, Concat)):
        return type(e)([_keepdims(c) for c in e.children], pos=e.pos)
    return type(e)(_keepdims(e.inner), pos=e.pos)


def _replace_brackets(e):
    if isinstance(e, Brackets):
        return Brackets(Axis(OUTPUT_AXIS))
    if isinstance(e, Axis):
        return copy(e)
    if isinstance(e, (List, Concat)):
        return type(e)([_replace_brackets(c) for c in e.children], pos=e.pos)
    return type(e)(_replace_brackets(e.inner), pos=e.pos)


def _split_concat(e):
    """All expressions obtained by choosing one operand of every concatenation."""
    if isinstance(e, Concat):
        return [x for c in e.children for x in _split_concat(c)]
    if isinstance(e, Axis):
        return [e]
    if isinstance(e, List):
        out = [[]]
        for c in e.children:
            out = [o + [x] for o in out for x in _split_concat(c)]
        return [List(o) for o in out]
    return [type(e)(x, pos=e.pos) for x in _split_concat(e.inner)]
