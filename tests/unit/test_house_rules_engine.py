"""House rules of the two bottom packages, models/ (the textbook) and engine/ (the speed-ups
beside it), read from their source: no module over 500 lines; imports only go down (models/
imports neither engine/ nor explorer/ nor the app; engine/ imports models/ but not explorer/);
no import cycle inside either package, lazy imports inside functions included."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500
# what each package may import from this repository
ALLOWED = {"models": {"models"}, "engine": {"models", "engine"}}
REPO_PACKAGES = {"models", "engine", "explorer", "app", "bench", "tests"}


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """Every module of this repository that `path` imports, at the top or inside a function
    (a lazy import is still an arrow of the graph)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out |= {f"{target}.{alias.name}" for alias in node.names}   # `from pkg import module`
    return {m for m in out if m.split(".")[0] in REPO_PACKAGES}


GRAPH = {name: imports_of(name, path) for package in ALLOWED for name, path in modules(package).items()}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_module_is_over_500_lines(package):
    long = {str(p.relative_to(ROOT)): n for p in modules(package).values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_only_go_down(package):
    upward = sorted(f"{name} -> {target}" for name, targets in GRAPH.items() if name.split(".")[0] == package
                    for target in targets if target.split(".")[0] not in ALLOWED[package])
    assert not upward, upward


def test_no_import_cycle():
    known = set(GRAPH)
    edges = {name: {t for t in targets if t in known and t != name} for name, targets in GRAPH.items()}
    # a package's __init__ is imported with each of its modules: not an arrow back up to it
    edges = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in edges.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    assert not cycles, [" -> ".join(c) for c in cycles]


def test_the_checks_would_catch_an_upward_import_and_a_cycle():
    assert "engine.batched" in GRAPH["engine.fused_batch"] or "engine.fused" in GRAPH["engine.fused_batch"]
    assert all(t.split(".")[0] in ALLOWED["models"] for t in GRAPH["models.forward"])
    assert imports_of("models.x", ROOT / "models" / "forward.py") >= {"models.attention"}
