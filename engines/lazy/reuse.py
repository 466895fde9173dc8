"""Reuse: a step that follows the last one takes that step's nodes and lazy tensors again.

A cached step makes the nodes and lazy tensors the last one made: the same calls at the same
step-log positions. When the last step ended with every one of its nodes held by its own lazy
tensor (one each, in position order) and no one else holding any tensor or node -- not the
program, not a weak reference (a node has none), not a node of another step -- :func:`spare` hands them to the
next step, which takes the one at each position it follows (``LazyContext.leaf`` and
:func:`.replay.direct_replayer`): the node's fields set to this step's call (a leaf's data; an
op's operands, which a sync cleared), no new node, tensor or pool round trip. Taken from the
start of the step only (``LazyContext.reused``: the positions taken so far, -1 when none may be):
a node at a position made afresh ends the taking, so a taken node's operands are always this
step's nodes. The rest of the step, and every step that does not qualify, makes its own.

"No one else holds it" is read off reference counts: a tensor is held by the step's list of
them alone; a node by the step log's list, its tensor and the nodes of the step whose operand it
is (:func:`node_refs`: counted from the nodes, or the last step's counts when this step took
every node of it and followed it to the end -- the same calls on the same positions, synced at
the same positions, so the same references).
"""

from __future__ import annotations

import functools
import sys
import weakref

from .ir import Node, walk

_refcount, _weakrefs = sys.getrefcount, weakref.getweakrefcount

# the references of a node no one else holds, in spare's loop: the step log's list, its tensor's
# ``node``, spare's ``n`` and getrefcount's argument (its operand references are added per node)
_OWN = 4


def node_refs(nodes: list) -> list:
    """Per position of ``nodes`` (a step's log), the references a node nobody else holds has in
    :func:`spare`: its own, and one per operand slot of a node of the step that names it (a
    synced node's operands are gone: it is a leaf)."""
    refs = [_OWN] * len(nodes)
    n = len(nodes)
    for node in nodes:
        if node.op != "input":
            for a in walk((node.args, node.kwargs)):
                if type(a) is Node:
                    p = a.pos
                    if p is not None and p < n and nodes[p] is a:
                        refs[p] += 1
    return refs


def spare(nodes: list, made: list, refs: list) -> bool:
    """Whether the next step may take ``made`` (the step's lazy tensors, one per node of ``nodes``
    in position order) by position: no one else holds a tensor or a node (``refs``: each node's
    own references, :func:`node_refs`). The nodes' data (the step's inputs and outputs) is
    dropped, not kept alive until the next step: from the last position down, so a node whose
    data goes is one no tensor or node still held can reach (operands are earlier positions)."""
    for p in range(len(made) - 1, -1, -1):
        t = made[p]
        if _refcount(t) != 3 or _weakrefs(t) or t.__dict__:  # (the list, t, the call; an attribute set on it)
            return False
        n = t.node
        if n is not nodes[p] or _refcount(n) != refs[p]:  # (a node has no weak references: ir.Node)
            return False
        n.data = None
    return True


_UNROLLED = 64  # (positions: a longer step checks in spare's loop, its code not generated)


def spare_check(nodes: list) -> tuple:
    """``(len(nodes), check)``: ``check(nodes, made)`` is :func:`spare` for a step with the
    references of ``nodes`` (:func:`node_refs`), carried from step to step (``StepLog.refs``):
    for up to 64 positions generated (:func:`_unrolled`), every test in one frame, no loop."""
    refs = node_refs(nodes)
    if len(refs) > _UNROLLED:
        return len(refs), functools.partial(_spare_refs, refs=refs)
    return len(refs), _unrolled(tuple(refs))


def _spare_refs(nodes: list, made: list, refs: list) -> bool:
    return spare(nodes, made, refs)


@functools.lru_cache(maxsize=256)
def _unrolled(refs: tuple):
    """:func:`spare` for ``len(refs)`` positions with ``refs`` references each, written out: each
    tensor and node in a local of its own (so each has the references the loop counts: the list,
    the local, the call's argument; a node's ``_OWN`` and its operand slots), every position
    tested before any node's data is dropped."""
    n = len(refs)
    ts, ns = "".join(f"t{p}, " for p in range(n)), "".join(f"n{p}, " for p in range(n))
    lines = ["def spare(nodes, made):", f"    {ts}= made", f"    {ns}= nodes"]
    for p in range(n - 1, -1, -1):
        lines += [
            f"    if rc(t{p}) != 3 or wr(t{p}) or t{p}.__dict__ or t{p}.node is not n{p} or rc(n{p}) != {refs[p]}:",
            "        return False",
        ]
    lines += [f"    n{p}.data = None" for p in range(n - 1, -1, -1)]
    lines.append("    return True")
    scope = {"rc": _refcount, "wr": _weakrefs}
    exec("\n".join(lines), scope)  # (our own text: positions and counts)
    return scope["spare"]
