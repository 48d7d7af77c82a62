"""House rules that hold between changes: the import graph only goes down, and no module is
over 500 lines.

The layers, lowest first (a module may import from its own layer and the ones below):
  models            the textbook engine
  engine            the fast paths beside it (when the package exists)
  explorer.serving  the shared decode loop: infrastructure under the experiments and the tabs
                    (it knows no tab, no lesson, no experiment and no visitor text)
  explorer data     the experiments, the checkpoints, the runtime, the lessons, the claims:
                    plain functions and typed results, no Gradio
  explorer.web      what stands between the network and the handlers (explorer/web/__init__.py)
  explorer.ui       the contract of a tab (explorer/ui/__init__.py)
  explorer.ui.page  the page's shared parts
  explorer.ui.tabs  the tabs
  app               composes the page and the tabs, hardens and launches
Inside a layer, packages form no circle either (explorer's subpackages; models and engine each
as one), nor do the modules of explorer/ and app.py. Every import is read off the source, a
function's lazy one included; one under `if TYPE_CHECKING:` never runs and is left out.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
while not (ROOT / "app.py").is_file():   # wherever this file sits under tests/
    ROOT = ROOT.parent
TOP_PACKAGES = ("models", "engine", "explorer")
MAX_LINES = 500

LAYERS = ("models", "engine", "explorer.serving", "explorer data", "explorer.web", "explorer.ui",
          "explorer.ui.page", "explorer.ui.tabs", "app")


def _modules() -> dict[str, Path]:
    modules = {}
    for top in TOP_PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    modules["app"] = ROOT / "app.py"
    return modules


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module of ours that importing `name` runs (a name inside a module: that module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # imports under `if TYPE_CHECKING:` never run: names for annotations, not edges
    hints = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If)
             and "TYPE_CHECKING" in ast.unparse(node.test) for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        if isinstance(node, ast.Import):
            found.update(_known(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in MODULES else _known(base))
    found.discard(None)
    found.discard(module)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def layer(module: str) -> int:
    for name in ("explorer.ui.tabs", "explorer.ui.page", "explorer.ui", "explorer.web",
                 "explorer.serving", "engine", "models", "app"):
        if module == name or module.startswith(name + "."):
            return LAYERS.index(name)
    return LAYERS.index("explorer data")


def package(module: str) -> str:
    """The unit of the package graph: explorer's subpackages (and single modules), the UI's
    three layers; models and engine each as one."""
    parts = module.split(".")
    if module.startswith(("explorer.ui.page", "explorer.ui.tabs")):
        return ".".join(parts[:3])
    if parts[0] == "explorer":
        return ".".join(parts[:2])
    return parts[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_is_read_from_the_source():
    # a few edges that must be there, so that a parser that finds nothing fails here
    assert "explorer.ui" in GRAPH["explorer.ui.tabs.generate"]
    assert "explorer.web" in GRAPH["app"]
    assert any(m.startswith("models") for m in GRAPH["explorer.runtime"])
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_up_a_layer():
    upward = sorted(f"{a} ({LAYERS[layer(a)]}) imports {b} ({LAYERS[layer(b)]})"
                    for a, targets in GRAPH.items() for b in targets if layer(b) > layer(a))
    assert not upward, "\n".join(upward)


def test_no_package_imports_itself_back():
    packages: dict[str, set[str]] = defaultdict(set)
    for a, targets in GRAPH.items():
        packages[package(a)].update(package(b) for b in targets if package(b) != package(a))
    circles = _cycles(dict(packages))
    details = ["  " + " -> ".join((a, b)) for circle in circles for a in sorted(GRAPH) for b in sorted(GRAPH[a])
               if package(a) in circle and package(b) in circle and package(a) != package(b)]
    assert not circles, f"{circles}\n" + "\n".join(details)


@pytest.mark.parametrize("top", ["explorer", "app"])
def test_no_module_of_the_app_imports_itself_back(top):
    graph = {m: {t for t in targets if t == "app" or t.startswith("explorer")}
             for m, targets in GRAPH.items() if m == "app" or m.startswith("explorer")}
    circles = [c for c in _cycles(graph) if any(m == top or m.startswith(top + ".") for m in c)]
    assert not circles, circles



def test_no_module_is_over_500_lines():
    """The app's modules, and the benchmarks', tests' and deployment's beside them."""
    beside = [p for top in ("bench", "tests", "deploy") for p in (ROOT / top).rglob("*.py")]
    paths = [*MODULES.values(), *beside]
    long = sorted(f"{path.relative_to(ROOT)}: {n} lines" for path in paths
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert not long, "\n".join(long)
