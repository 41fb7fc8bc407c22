"""No import loop between forensics' modules: every import (at the top of a module and inside its functions,
since a lazy import is still a dependency) is an edge of the module graph, and the graph has no cycle. A loop
means two modules are one concept split in two, or a shared piece sits a layer too high; move it down."""

import ast
import pathlib

from tests.conftest import REPO

PACKAGE = REPO / "forensics"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (a relative one resolved against the importer's package)."""
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _edges(importer: str, path: pathlib.Path, modules) -> set[str]:
    """The forensics modules `importer` imports anywhere in its text: `import a.b` names a.b, `from a import b`
    names the submodule a.b when there is one, else the module a itself."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(importer, path, node)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules and name != importer)
    return found


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that starts and ends at the same module, or None (a depth-first
    search that keeps the path it is on)."""
    state = {}  # 1: on the current path, 2: finished
    for start in sorted(edges):
        if state.get(start):
            continue
        path = [start]
        stack = [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return path[path.index(following):] + [following]
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(edges.get(following, ()))))
    return None


def test_find_cycle_reports_a_loop_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_lazy_imports_are_edges(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from forensics.io import dump\n", encoding="utf-8")
    assert _edges("forensics.x", source, {"forensics.io", "forensics.io.dump"}) == {"forensics.io.dump"}


def test_no_import_cycle_between_modules():
    cycle = find_cycle(graph())
    assert cycle is None, "import loop: " + " -> ".join(cycle)
