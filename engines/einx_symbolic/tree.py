"""Expression trees of einx notation (before and after ellipsis expansion).

Node kinds: ``Axis`` (named or unnamed/numeric), ``List`` (juxtaposition),
``Flat`` (composition ``(...)``), ``Concat`` (``(a + b)``), ``Brackets``
(``[...]``) and ``Ell`` (ellipsis).  ``pos`` is the (begin, end) character
range in the description, used to mark errors.
"""

from dataclasses import dataclass, field

ANON = "_anonymous_ellipsis_axis"


@dataclass(eq=False)
class Node:
    pos: tuple = field(default=(-1, -1), kw_only=True)


@dataclass(eq=False)
class Axis(Node):
    name: str
    value: int | None = None  # fixed for unnamed axes like "1" or "3"
    marked: bool = False  # inside brackets (set after expansion)

    def __str__(self):
        s = str(self.value) if self.value is not None else self.name
        return f"[{s}]" if self.marked else s


@dataclass(eq=False)
class List(Node):
    children: list

    def __str__(self):
        return " ".join(str(c) for c in self.children)


@dataclass(eq=False)
class Flat(Node):
    inner: "Node"

    def __str__(self):
        return f"({self.inner})"


@dataclass(eq=False)
class Concat(Node):
    children: list

    def __str__(self):
        return "(" + " + ".join(str(c) for c in self.children) + ")"


@dataclass(eq=False)
class Brackets(Node):
    inner: "Node"

    def __str__(self):
        return f"[{self.inner}]"


@dataclass(eq=False)
class Ell(Node):
    inner: "Node"

    def __str__(self):
        s = str(self.inner)
        return "..." if s == ANON else s + "..."


def children(n):
    if isinstance(n, (List, Concat)):
        return n.children
    if isinstance(n, (Flat, Brackets, Ell)):
        return [n.inner]
    return []


def nodes(n):
    """All nodes of the tree in pre-order."""
    yield n
    for c in children(n):
        yield from nodes(c)


def axes(n):
    return [x for x in nodes(n) if isinstance(x, Axis)]


def has_brackets(n):
    return any(isinstance(x, Brackets) for x in nodes(n))


def bracket_axes(n, inside=False):
    """Axes of ``n`` that are inside brackets (pre-expansion trees)."""
    if isinstance(n, Axis):
        return [n] if inside else []
    inside = inside or isinstance(n, Brackets)
    return [a for c in children(n) for a in bracket_axes(c, inside)]


def copy(n):
    if isinstance(n, Axis):
        return Axis(n.name, n.value, n.marked, pos=n.pos)
    if isinstance(n, (List, Concat)):
        return type(n)([copy(c) for c in n.children], pos=n.pos)
    return type(n)(copy(n.inner), pos=n.pos)


def remove_brackets(n, keep_children):
    """Drop bracketed subtrees (``keep_children=False``) or just the brackets."""
    if isinstance(n, Brackets):
        return copy(n.inner) if keep_children else None
    if isinstance(n, Axis):
        return copy(n)
    if isinstance(n, List):
        return List([c for c in (remove_brackets(c, keep_children) for c in n.children) if c is not None], pos=n.pos)
    if isinstance(n, Concat):
        return Concat([remove_brackets(c, keep_children) or List([]) for c in n.children], pos=n.pos)
    inner = remove_brackets(n.inner, keep_children)
    if inner is None:
        if isinstance(n, Flat):
            return Flat(List([]), pos=n.pos)
        return None
    return type(n)(inner, pos=n.pos)


def el_part(n):
    """The 'elementary' part of an expression: what is inside brackets (einx's _to_el_expr)."""
    if isinstance(n, Brackets):
        return copy(n.inner)
    if isinstance(n, Axis):
        return List([])
    if isinstance(n, List):
        cs = [el_part(c) for c in n.children]
        return List([c for c in cs if not (isinstance(c, List) and not c.children)])
    if isinstance(n, Concat):
        return List([])
    inner = el_part(n.inner)
    if isinstance(inner, List) and not inner.children:
        return List([])
    return type(n)(inner, pos=n.pos)


def is_empty(n):
    return isinstance(n, List) and not n.children
