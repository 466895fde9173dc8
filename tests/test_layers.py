"""The project's import structure, read statically from the source with ``ast``.

Layers are one-way: ``harness`` → ``backends`` → ``engines.sizes``, and
``cases`` (data and oracles) imports no backend but the size algebra. Imports
form no cycle. Every import counts, also one deferred into a function: a
deferred import that closes a circle still ties the modules in it together
(the StableHLO lowering's 12-module circle was one).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dynshape", "harness", "backends", "cases", "engines", "conformance")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.name.startswith("test_") or path.name == "conftest.py":
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` (or its longest importable prefix) is, else None."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> list[tuple[str, bool, int]]:
    """``(target module, at module level, line)`` for each project import of ``module``."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    # module level: statements of the body, also inside module-level try/if blocks
    for node in tree.body:
        if isinstance(node, (ast.Try, ast.If)):
            top.update(id(n) for n in ast.walk(node))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name)
            if target is None or target == module:
                continue
            out.append((target, id(node) in top, node.lineno))
            # importing P.q runs package P first, unless P encloses the importer
            parent = target.rpartition(".")[0]
            while parent and not (module == parent or module.startswith(parent + ".")):
                if parent in MODULES:
                    out.append((parent, id(node) in top, node.lineno))
                parent = parent.rpartition(".")[0]
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _layer_violations(src_prefix: str, allowed) -> list[str]:
    return [
        f"{src}:{line} imports {dst}"
        for src, edges in GRAPH.items()
        if src.split(".")[0] == src_prefix
        for dst, _, line in edges
        if not allowed(dst)
    ]


def test_backends_never_import_the_harness():
    assert _layer_violations("backends", lambda dst: not dst.startswith("harness")) == []


def test_engines_import_no_adapter_case_or_harness():
    assert _layer_violations("engines", lambda dst: dst.split(".")[0] == "engines") == []


def test_the_conformance_suites_test_the_engines_alone():
    """They test our reference paths directly, as torch tests a backend on OpInfo: no adapter, case or harness."""
    assert _layer_violations("conformance", lambda dst: dst.split(".")[0] in ("conformance", "engines")) == []


def _is_sizes(dst: str) -> bool:
    return dst == "engines" or dst == "engines.sizes" or dst.startswith("engines.sizes.")


def test_the_case_model_imports_nothing_of_the_project_but_the_size_algebra():
    assert _layer_violations("cases", lambda dst: dst.split(".")[0] == "cases" or _is_sizes(dst)) == []


def test_the_size_algebra_imports_nothing_else_of_the_project():
    bad = [
        f"{src}:{line} imports {dst}"
        for src, edges in GRAPH.items()
        if src.startswith("engines.sizes")
        for dst, _, line in edges
        if not _is_sizes(dst)
    ]
    assert bad == []


def _cycle() -> list[str] | None:
    """One cycle of imports, as a list of modules, or None."""
    edges = {m: sorted({d for d, _, _ in es}) for m, es in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in edges.get(m, ()):
            if state.get(d) == 1:
                return stack[stack.index(d) :] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_imports_have_no_cycle():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_the_walker_sees_imports_and_cycles(monkeypatch):
    # real edges are found, deferred ones included
    assert any(dst == "backends.base" and top for dst, top, _ in GRAPH["harness.runner"])
    assert any(dst == "backends.envs" and not top for dst, top, _ in GRAPH["backends.base"])
    # and the checks fail when their graph has what they look for
    monkeypatch.setitem(GRAPH, "backends.fake_a", [("backends.fake_b", True, 3), ("harness.runner", False, 9)])
    monkeypatch.setitem(GRAPH, "backends.fake_b", [("backends.fake_a", True, 4)])
    assert _cycle() in (
        ["backends.fake_a", "backends.fake_b", "backends.fake_a"],
        ["backends.fake_b", "backends.fake_a", "backends.fake_b"],
    )
    assert "backends.fake_a:9 imports harness.runner" in _layer_violations("backends", lambda d: not d.startswith("harness"))
    monkeypatch.setitem(GRAPH, "engines.fake_c", [("backends.base", False, 5)])
    assert _layer_violations("engines", lambda dst: dst.split(".")[0] == "engines") == ["engines.fake_c:5 imports backends.base"]


#: the most lines a module of ours may have: past it, it does more than one job
MAX_LINES = 500


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_500_lines(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines (at most {MAX_LINES}): split it by job"


def test_the_harness_never_imports_the_api_above_it():
    """``dynshape`` (the user's API) stands on the harness and the cases; nothing below imports it."""
    bad = [
        f"{src}:{line} imports {dst}"
        for src, edges in GRAPH.items()
        if src.split(".")[0] != "dynshape"
        for dst, _, line in edges
        if dst.split(".")[0] == "dynshape"
    ]
    assert bad == []


#: the backend modules the harness may import: the interface and the environments
HARNESS_MAY_IMPORT = ("backends", "backends.base", "backends.envs")


def _names_a_backend_module(node: ast.AST) -> str | None:
    """The backend module ``node`` imports or names as a whole string
    (``"backends.torch_compile:warm_inductor"``, ``"backends.jax_jit"``), if any."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level:
        names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        names = [n for n in names if n in MODULES] or [node.module or ""]
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        names = [node.value.partition(":")[0].strip()]
        if not re.fullmatch(r"backends(\.\w+)+", names[0]):
            return None
    else:
        return None
    return next((n for n in names if n.split(".")[0] == "backends" and n not in HARNESS_MAY_IMPORT), None)


def _harness_naming_backends(sources: dict[str, str]) -> list[str]:
    bad = []
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            found = _names_a_backend_module(node)
            if found:
                bad.append(f"{name}:{node.lineno} names {found}")  # type: ignore[attr-defined]
    return bad


def test_the_harness_names_no_backend_module():
    """The harness learns everything about a backend from its descriptor: it imports
    no backend module but the interface, and names none in a string (a preload,
    a warm-up step, an entry point)."""
    sources = {m: p.read_text() for m, p in MODULES.items() if m.split(".")[0] == "harness"}
    assert _harness_naming_backends(sources) == []
    # and the check sees each way of naming one
    for text in (
        "import backends.jax_jit",
        "from backends.torch_compile import warm_inductor",
        "from backends import torch_eager",
        "STEPS = ('torch._dynamo', 'backends.torch_compile:warm_inductor')",
    ):
        assert _harness_naming_backends({"harness.fake": text}) != [], text
    assert _harness_naming_backends({"harness.fake": "from backends.base import Backend\nimport backends.envs"}) == []


def _getattr_self_private(text: str) -> list[int]:
    """Lines of ``getattr(self, "_...")``: per-job state kept undeclared on an object."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id == "self"
        and isinstance(node.args[1], ast.Constant)
        and str(node.args[1].value).startswith("_")
    ]


def test_backends_keep_no_undeclared_state():
    """Every backend's state is in fields its ``__init__`` declares (the
    descriptor's per-worker ones, the program's per-job ones): no
    ``getattr(self, "_x", default)`` reads in backends/."""
    bad = {
        m: lines for m, p in MODULES.items() if m.split(".")[0] == "backends" and (lines := _getattr_self_private(p.read_text()))
    }
    assert bad == {}
    assert "getattr(self" not in "\n".join(p.read_text() for m, p in MODULES.items() if m.split(".")[0] == "backends")
    assert _getattr_self_private("x = getattr(self, '_job', None)") == [1]


def test_the_export_range_rule_is_spelled_once():
    """Where an exported dim starts (``export_range``) and how its ``Dim`` is made
    (``export_dim``) live in engines/torch_export_tools.py: no other module builds a
    ``Dim(...)`` or spells ``max(2, …)``."""
    home = "engines.torch_export_tools"
    bad = []
    for module, path in MODULES.items():
        if module == home:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if "``" not in code and re.search(r"from torch\.export import .*\bDim\b|torch\.export\.Dim\(|max\(\s*2\s*,", code):
                bad.append(f"{module}:{n}: {line.strip()}")
    assert bad == []
