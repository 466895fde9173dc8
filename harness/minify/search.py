"""The search: the smallest reduced program (:class:`~harness.minify.graph.Cut`)
that still fails the way the job did.

Two phases, each a kind of delta debugging over the graph's nodes, every
candidate run on the backend (:func:`harness.minify.failure.observe`):

1. **the output moves back**: among the tensor nodes the current output reads,
   bisect for an earlier one whose program still fails (a hit restarts the
   bisection among *its* ancestors), then step to a direct operand while one
   fails. A wrong value shows first at the op that computes it wrong.
2. **the inputs move forward**: the values ``d`` edges back from the output
   become inputs of their own (fed with the original program's values), for
   ``d = 1, 2, ...``: the first ``d`` that still fails keeps the fewest ops.
   A value that cannot be an input (a size expression no dim names) is kept
   and its own operands cut instead.
3. **one op at a time**: each op left (the farthest from the output first)
   becomes an input if the program still fails without it, within
   ``budget`` candidates in all (phase 2 cuts whole levels; a cause that
   needs two ops far apart keeps the levels between them until this phase).
"""

from __future__ import annotations

from collections.abc import Callable

from .graph import Cut, Source


class Search:
    """``fails(cut)``: whether ``cut``'s program fails the same way (memoised here);
    ``log``: one line per candidate tried."""

    def __init__(
        self, source: Source, fails: Callable[[Cut], bool], log: Callable[[str], None] = lambda s: None, budget: int = 60
    ):
        self.source, self._fails, self.log, self.budget = source, fails, log, budget
        self.seen: dict[Cut, bool] = {}

    def fails(self, cut: Cut) -> bool:
        if cut not in self.seen:
            inputs, body = self.source.slice(cut)
            self.seen[cut] = ok = self._fails(cut)
            self.log(f"  {'fails' if ok else 'passes'}: output {cut.output}, {self.source.ops(body)} ops, {len(inputs)} inputs")
        return self.seen[cut]

    def run(self, start: Cut) -> Cut:
        return self.one_by_one(self.cut_inputs(self.move_output(start.output)))

    def one_by_one(self, cut: Cut) -> Cut:
        """Phase 3: cut each remaining op that the failure does not need."""
        _, body = self.source.slice(cut)
        for name in body:  # graph order: the farthest from the output first
            if len(self.seen) >= self.budget:
                break
            if name == cut.output or name in cut.cuts or not self.source.cuttable(name):
                continue
            _, now = self.source.slice(cut)
            if name not in now:  # an earlier cut removed it already
                continue
            trial = Cut(cut.output, cut.cuts | {name})
            if self.fails(trial):
                cut = trial
        return cut

    def move_output(self, output: str) -> str:
        """Phase 1: the earliest output found whose program still fails."""
        anc = self.source.ancestors(output)
        lo, hi = 0, len(anc)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.fails(Cut(anc[mid])):
                output = anc[mid]
                anc = self.source.ancestors(output)
                lo, hi = 0, len(anc)
            else:
                lo = mid + 1
        moved = True
        while moved:  # a direct operand that still fails (bisection may step over it)
            moved = False
            for n in self.source.nodes[output].all_input_nodes:
                if n.op == "call_function" and self.source.is_tensor(n.name) and self.fails(Cut(n.name)):
                    output, moved = n.name, True
                    break
        return output

    def cut_inputs(self, output: str) -> Cut:
        """Phase 2: the nearest cut of ``output``'s slice that still fails (no cut: the whole slice)."""
        levels = self.source.levels(output)
        for depth in range(1, len(levels) + 1):
            cuts = self.frontier(output, depth)
            if not cuts:
                continue
            cut = Cut(output, frozenset(cuts))
            if self.fails(cut):
                return cut
        return Cut(output)

    def frontier(self, output: str, depth: int) -> set[str]:
        """The nodes to cut so that every op within ``depth`` edges of ``output`` is kept:
        the nodes ``depth`` edges back, an uncuttable one replaced by its own operands."""
        src = self.source
        cuts: set[str] = set()
        level = [output]
        seen = {output}
        for d in range(1, depth + 1):
            nxt: list[str] = []
            for name in level:
                for n in src.nodes[name].all_input_nodes:
                    if n.name in seen or n.op != "call_function":
                        continue
                    seen.add(n.name)
                    if d == depth and src.cuttable(n.name):
                        cuts.add(n.name)
                    else:
                        nxt.append(n.name)
            level = nxt
        # an uncuttable node at the frontier (a size, a shape no dim names) pulls in its operands
        while level:
            nxt = []
            for name in level:
                for n in src.nodes[name].all_input_nodes:
                    if n.name in seen or n.op != "call_function":
                        continue
                    seen.add(n.name)
                    if src.cuttable(n.name):
                        cuts.add(n.name)
                    else:
                        nxt.append(n.name)
            level = nxt
        return cuts
