"""The package's shape: its import graph has no cycle (read statically with
``ast``, function-level imports included), it does not import the harness,
and no module grows past 500 lines without saying why at its top."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "backends.stablehlo"
ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict:
    """``{dotted name: path}`` of every module of ``package`` (a package is its ``__init__``)."""
    base = root.joinpath(*package.split("."))
    out = {}
    for p in sorted(base.rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict:
    """``{module: {imported module of the package: first line importing it}}``.

    ``from X import name`` imports the submodule ``X.name`` when there is one,
    else ``X`` itself; importing ``P.q`` also runs package ``P`` unless ``P``
    encloses the importer (then it is already being imported)."""
    mods = modules(root, package)
    graph = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name if is_pkg else name.rpartition(".")[0]
        edges = {}

        def add(target, line):
            if target in mods and target != name:
                edges.setdefault(target, line)
                parent = target.rpartition(".")[0]
                if parent in mods and not (name + ".").startswith(parent + "."):
                    edges.setdefault(parent, line)

        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    add(a.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")
                    base = base[:len(base) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                for a in node.names:
                    add(f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: dict) -> list:
    """Each strongly connected component of more than one module, as one cycle through it."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_shortest_cycle(graph, set(comp), min(comp)) for comp in comps]


def _shortest_cycle(graph: dict, members: set, start: str) -> list:
    """A shortest cycle from ``start`` back to it inside ``members`` (breadth first)."""
    prev, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {start}")


def describe(graph: dict, cycle: list) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_no_import_cycle():
    graph = import_graph()
    assert {"backends.stablehlo.builder", "backends.stablehlo.lower", "backends.stablehlo.ops.symint"} <= set(graph)
    assert "backends.stablehlo.builder" in graph["backends.stablehlo.ops.symint"]
    found = cycles(graph)
    assert not found, "import cycles in backends/stablehlo:\n" + "\n".join(describe(graph, c) for c in found)


def test_op_families_do_not_import_the_driver():
    graph = import_graph()
    for name, edges in graph.items():
        if name.startswith("backends.stablehlo.ops"):
            assert "backends.stablehlo.lower" not in edges and "backends.stablehlo" not in edges, name


def test_cycle_finder_names_a_cycle(tmp_path):
    pkg = tmp_path / "backends" / "stablehlo"
    (pkg / "ops").mkdir(parents=True)
    (tmp_path / "backends" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "lower.py").write_text("def lower():\n    from . import ops\n")
    (pkg / "ops" / "__init__.py").write_text("from . import a\n")
    (pkg / "ops" / "a.py").write_text("from ..lower import lower\n")
    graph = import_graph(tmp_path)
    found = cycles(graph)
    assert found == [["backends.stablehlo.lower", "backends.stablehlo.ops", "backends.stablehlo.ops.a",
                      "backends.stablehlo.lower"]], found
    assert describe(graph, found[0]).startswith("backends.stablehlo.lower (line 2) -> backends.stablehlo.ops (line 1)")


def test_no_harness_imports():
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                bad = [a.name for a in node.names if a.name.split(".")[0] == "harness"]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                bad = [node.module] if (node.module or "").split(".")[0] == "harness" else []
            else:
                continue
            assert not bad, f"{name} line {node.lineno} imports {bad[0]} (backends must not import the harness)"


def test_modules_stay_small():
    for name, path in modules().items():
        n = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert n <= MAX_LINES or f"over {MAX_LINES} lines" in doc, \
            f"{name} has {n} lines; split it by job or say at its top why it is over {MAX_LINES} lines"
