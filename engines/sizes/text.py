"""The text of a normal-form size expression (:mod:`engines.sizes.expr`),
parsed back by :func:`engines.sizes.parse.parse` to an equal normal form.

It reads an expression's terms and atoms only (``terms``, ``single_atom``,
``is_const``, ``value``; ``kind``, ``name``, ``args``): the normal form
imports this module, not the other way round.
"""

from __future__ import annotations


def mono_key(m) -> tuple:
    return tuple([(a.key, p) for a, p in m]) if m else ()


def fmt_operand(e, tight: bool) -> str:
    s = fmt(e)
    if len(e.terms) > 1:
        return f"({s})"
    if tight:  # a divisor: only a name, call or non-negative constant stays bare
        a = e.single_atom()
        if not ((a is not None and a.kind in ("var", "max", "min")) or (e.is_const and e.value >= 0)):
            return f"({s})"
    return s


def fmt_atom(a) -> str:
    if a.kind == "var":
        return str(a.name)
    if a.kind in ("max", "min"):
        return f"{a.kind}({', '.join(fmt(x) for x in a.args)})"
    n, d = a.args
    return f"{fmt_operand(n, False)} {'//' if a.kind == 'floordiv' else '%'} {fmt_operand(d, True)}"


def fmt_term(m, c: int) -> str:
    """``|c| * m`` (the caller writes the sign); an operation factor is
    bracketed unless it is the whole term (``a // 2``, ``-(a // 2)``)."""
    mag = abs(c)
    if not m:
        return str(mag)
    bare = c == 1 and len(m) == 1 and m[0][1] == 1
    factors = [fmt_atom(a) if bare or a.kind not in ("floordiv", "mod") else f"({fmt_atom(a)})" for a, p in m for _ in range(p)]
    return "*".join(([str(mag)] if mag != 1 else []) + factors)


def fmt(e) -> str:
    if not e.terms:
        return "0"
    terms = sorted(e.terms, key=lambda mc: (not mc[0], mc[1] < 0, mono_key(mc[0])))
    out = ""
    for m, c in terms:
        s = fmt_term(m, c)
        out += (" - " if c < 0 else " + ") + s if out else ("-" if c < 0 else "") + s
    return out
