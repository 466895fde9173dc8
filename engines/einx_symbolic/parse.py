"""Parser for einx 0.4 notation (mirrors einx's stage1 parser).

``parse(description)`` returns ``(inputs, outputs)``: lists of expression
trees; ``outputs`` is ``None`` when the description has no ``->``.  Arrows and
commas may appear nested (``"a [b -> c]"``); they are moved to the top level
exactly like einx does.
"""

import re
from functools import lru_cache

from .errors import NotationSyntaxError, shown
from .tree import ANON, Axis, Brackets, Concat, Ell, Flat, List, axes

_NARY = ["->", "|", ",", "+", " "]
_OPEN = {"(": ")", "[": "]"}
_LITERALS = _NARY + ["(", "[", ")", "]", "..."]
_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_DIGITS = re.compile(r"[0-9]+")  # ASCII: str.isdigit() also takes "²" and "٣"


def identifier(name):
    """``name`` if it is an axis name the notation allows (ASCII
    ``[a-zA-Z_][a-zA-Z0-9_]*``), else ``ValueError``. These are the only
    characters of a description that reach generated code, and only inside
    our own prefixed locals (``p_<name>``), so keywords, builtins and
    dunders (``lambda``, ``print``, ``__import__``) are safe axis names."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an axis name: it must match {_NAME.pattern}")
    return name


class _Tok:
    __slots__ = ("b", "e", "t")

    def __init__(self, b, t):
        self.b, self.e, self.t = b, b + len(t), t


class _Group:
    def __init__(self, toks, b):
        self.toks, self.b = toks, b
        self.e = toks[-1].e if toks else b
        self.t = None


class _Op:  # list of _Args
    def __init__(self, children):
        self.children = children


class _Args:  # list of expressions
    def __init__(self, children):
        self.children = children


def _lex(text):
    toks, start, pos = [], 0, 0

    def emit(end):
        nonlocal start
        if start != end:
            t = text[start:end]
            if t not in _LITERALS and not _NAME.fullmatch(t) and not _DIGITS.fullmatch(t):
                raise NotationSyntaxError(
                    text,
                    f"The expression '{''.join(map(shown, t))}' is not allowed:\n%EXPR%\nThe following expressions are allowed:\n"
                    "- Literals: -> + , [ ] ( ) ... whitespace\n- Named axes: Must match the regex [a-zA-Z_][a-zA-Z0-9_]*\n"
                    "- Unnamed axes: Must match the regex [0-9]+\n",
                    range(start, end),
                )
            toks.append(_Tok(start, t))
            start = end

    while pos < len(text):
        for lit in _LITERALS:
            if text.startswith(lit, pos):
                emit(pos)
                emit(pos + len(lit))
                pos += len(lit)
                break
        else:
            pos += 1
    emit(pos)
    out = []
    for t in toks:  # collapse runs of whitespace
        if t.t == " " and out and out[-1].t == " ":
            continue
        out.append(t)
    return out


def _group(text, toks):
    stack = [[]]
    for t in toks:
        if t.t in _OPEN:
            stack.append([t])
        elif t.t in (")", "]"):
            if len(stack) == 1 or _OPEN[stack[-1][0].t] != t.t:
                kind = "parenthesis" if t.t == ")" else "bracket"
                raise NotationSyntaxError(text, f"Found a closing {kind} that is not opened:\n%EXPR%", range(t.b, t.e))
            stack[-1].append(t)
            g = stack.pop()
            stack[-1].append(_Group(g, g[0].b))
        else:
            stack[-1].append(t)
    if len(stack) > 1:
        t = stack[-1][0]
        kind = "parenthesis" if t.t == "(" else "bracket"
        raise NotationSyntaxError(text, f"Found an opening {kind} that is not closed:\n%EXPR%", range(t.b, t.e))
    return _Group(stack[0], 0)


def _parse(text, group, in_paren=False):
    toks = list(group.toks)
    while toks and toks[0].t == " ":
        toks.pop(0)
    while toks and toks[-1].t == " ":
        toks.pop()
    if not toks:
        return List([], pos=(group.b, group.e))
    if len(toks) == 1 and isinstance(toks[0], _Group):
        return _parse(text, toks[0], in_paren)
    b, e = toks[0].b, toks[-1].e
    if toks[0].t in _OPEN:
        inner = _parse(text, _Group(toks[1:-1], toks[1].b), toks[0].t == "(")
        if toks[0].t == "(":
            return inner if isinstance(inner, Concat) else Flat(inner, pos=(b, e))
        return Brackets(inner, pos=(b, e))
    for op in _NARY:
        if any(t.t == op for t in toks):
            operands, cur = [], []
            for t in toks:
                if t.t == op:
                    operands.append(_Group(cur, cur[0].b if cur else t.b))
                    cur = []
                else:
                    cur.append(t)
            operands.append(_Group(cur, cur[0].b if cur else toks[-1].e))
            if op == " ":
                operands = [o for o in operands if o.toks]
            ops = [_parse(text, o) for o in operands]
            if op == " ":
                return List(ops, pos=(b, e))
            if op == "->":
                return _Op(ops)
            if op == ",":
                return _Args(ops)
            if op == "+":
                bad = [o for o in ops if not isinstance(o, (Axis, Flat))]
                if bad:
                    pos = [p for o in bad for p in range(*o.pos)] + [t.b for t in toks if t.t == "+"]
                    raise NotationSyntaxError(
                        text,
                        "Only named axes, unnamed axes, and flattened axes are allowed as operands of a "
                        "concatenation operator ('+').\n%EXPR%",
                        pos,
                    )
                if not in_paren:
                    raise NotationSyntaxError(text, "Concatenated axes must be wrapped in parentheses.\n%EXPR%", range(b, e))
                return Concat(ops, pos=(b, e))
            raise NotationSyntaxError(
                text, f"The operator '{op}' is not supported in einx 0.4 notation.\n%EXPR%", [t.b for t in toks if t.t == op]
            )
    if toks[-1].t == "..." and len(toks) <= 2:
        inner = Axis(ANON, pos=(b, b)) if len(toks) == 1 else _parse(text, _Group(toks[:1], toks[0].b))
        return Ell(inner, pos=(b, e))
    if len(toks) == 1:
        v = toks[0].t
        if v.isdigit():
            return Axis(f"unnamed.{b}", int(v), pos=(b, e))
        return Axis(v, pos=(b, e))
    msg = f"The expression '{text[b:e]}' is not valid. Are you maybe missing a whitespace?\n%EXPR%"
    raise NotationSyntaxError(text, msg, range(b, e))


def _move_up(text, n, level_cls, what):
    """Lift nested '->' (level_cls=_Op) or ',' (_Args) to the top, like einx."""
    if isinstance(n, Axis):
        return level_cls([n])
    if isinstance(n, (Flat, Brackets, Ell)):
        sub = _move_up(text, n.inner, level_cls, what)
        return level_cls([type(n)(c, pos=n.pos) for c in sub.children])
    if isinstance(n, (List, Concat)):
        subs = [_move_up(text, c, level_cls, what) for c in n.children]
        nums = {len(s.children) for s in subs if len(s.children) != 1}
        if len(nums) > 1:
            raise NotationSyntaxError(
                text,
                f"All '{what}' operators must appear at the same level of the expression tree.\n%EXPR%",
                [i for i in range(len(text)) if text.startswith(what, i)],
            )
        num = nums.pop() if nums else 1
        return level_cls(
            [type(n)([s.children[0] if len(s.children) == 1 else s.children[i] for s in subs], pos=n.pos) for i in range(num)]
        )
    if isinstance(n, level_cls):
        return level_cls([x for c in n.children for x in _move_up(text, c, level_cls, what).children])
    if isinstance(n, _Args) and level_cls is _Op:
        subs = [_move_up(text, c, _Op, what) for c in n.children]
        nums = {len(s.children) for s in subs if len(s.children) != 1}
        if len(nums) > 1:
            raise NotationSyntaxError(
                text,
                "All '->' operators must appear at the same level of the expression tree.\n%EXPR%",
                [i for i in range(len(text)) if text.startswith("->", i)],
            )
        num = nums.pop() if nums else 1
        return _Op([_Args([s.children[0] if len(s.children) == 1 else s.children[i] for s in subs]) for i in range(num)])
    raise AssertionError(type(n))


def _drop_nested_brackets(n, inside=False):
    if isinstance(n, Axis):
        return n
    if isinstance(n, Brackets):
        inner = _drop_nested_brackets(n.inner, True)
        return inner if inside else Brackets(inner, pos=n.pos)
    if isinstance(n, (List, Concat)):
        return type(n)([_drop_nested_brackets(c, inside) for c in n.children], pos=n.pos)
    return type(n)(_drop_nested_brackets(n.inner, inside), pos=n.pos)


@lru_cache(maxsize=4096)
def parse(text):
    """Parse an einx description into ``(inputs, outputs_or_None)``."""
    if not isinstance(text, str):
        raise ValueError("The operation description must be a string.")
    tree = _parse(text, _group(text, _lex(text)))
    op = _move_up(text, tree, _Op, "->")
    op = _Op(
        [
            _move_up(text, c, _Args, ",")
            if not isinstance(c, _Args)
            else _Args([x for cc in c.children for x in _move_up(text, cc, _Args, ",").children])
            for c in op.children
        ]
    )
    if len(op.children) > 2:
        raise NotationSyntaxError(
            text,
            "The expression must not contain more than one '->' operator.\n%EXPR%",
            [i + k for i in range(len(text)) if text.startswith("->", i) for k in range(2)],
        )
    sides = [[_drop_nested_brackets(e) for e in args.children] for args in op.children]
    _check_bracket_consistency(text, sides)
    return sides[0], (sides[1] if len(sides) == 2 else None)


def _check_bracket_consistency(text, sides):
    from .tree import bracket_axes

    marked, unmarked = set(), set()
    for side in sides:
        for e in side:
            m = {id(a) for a in bracket_axes(e)}
            for a in axes(e):
                (marked if id(a) in m else unmarked).add(a.name)
    for name in sorted(marked & unmarked):
        if name.startswith("unnamed."):
            continue
        pos = [p for side in sides for e in side for a in axes(e) if a.name == name for p in range(*a.pos)]
        raise NotationSyntaxError(
            text,
            f"There are multiple occurrences of axis {name} with inconsistent bracket usage:\n%EXPR%\n"
            "An axis may only appear with brackets or without brackets, but not both.",
            pos,
        )
