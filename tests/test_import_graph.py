"""No import circles across files: each module of localmem can be read, and changed, after the
modules it imports, never in a ring with them. The graph counts every import of a file, at its
top and inside functions (an import put off into a function is still a dependency, and a circle
through it only waits for the call that closes it). Two rooms may keep circles among their own
files, as one room each: ``localmem.importers`` and ``localmem.store``."""

from __future__ import annotations

import ast
from pathlib import Path

import localmem

PACKAGE = Path(localmem.__file__).parent
ROOMS_ALLOWED = ("localmem.importers", "localmem.store")  # a circle wholly inside one of them may stay


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The localmem modules ``path`` (module ``name``) imports anywhere in it. ``from X import y``
    counts as an import of ``X.y`` when that is a module, else of ``X``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    found.add(f"{source}.{alias.name}")
                elif source in known:
                    found.add(source)
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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
                    out.append(sorted(component))
    return out


def allowed(component: list[str]) -> bool:
    return any(all(m == room or m.startswith(room + ".") for m in component) for room in ROOMS_ALLOWED)


def test_no_import_circle_across_files() -> None:
    graph = import_graph()
    assert "localmem.serve.api" in graph and graph["localmem.serve.app"], "the graph reads the package"
    found = [c for c in circles(graph) if not allowed(c)]
    assert not found, "import circles across files:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_graph_finds_a_circle_through_a_function_level_import(tmp_path: Path) -> None:
    """The check itself: a circle closed only inside a function is found, one inside an allowed
    room is not reported."""
    graph = {
        "localmem.serve.a": {"localmem.serve.b"},
        "localmem.serve.b": set(),
        "localmem.store.x": {"localmem.store.y"},
        "localmem.store.y": {"localmem.store.x"},
    }
    source = tmp_path / "b.py"
    source.write_text("def later():\n    from .a import thing\n")
    graph["localmem.serve.b"] = imports_of("localmem.serve.b", source, set(graph))
    assert graph["localmem.serve.b"] == {"localmem.serve.a"}
    found = circles(graph)
    assert ["localmem.serve.a", "localmem.serve.b"] in found
    assert [c for c in found if not allowed(c)] == [["localmem.serve.a", "localmem.serve.b"]]
