"""The house rules that a parser can check: the library never imports the CLI or rich, and optional
dependencies are imported lazily (inside functions), so the core works with numpy + rich + flatbuffers."""

import ast

from tests.conftest import REPO

PACKAGE = REPO / "forensics"
OPTIONAL = {"ai_edge_litert", "tflite_runtime", "PIL", "matplotlib", "pandas", "pyarrow", "nbclient", "nbformat"}


def _imports(tree, top_level_only):
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE), ast.parse(path.read_text(encoding="utf-8"))


def test_library_never_imports_cli_or_rendering():
    # forensics.reports composes the library and the renderers (its reports render themselves): above render.
    offenders = []
    for rel, tree in _modules():
        if rel.parts[0] in ("cli", "render") or rel.name in ("__main__.py", "reports.py"):
            continue
        for name in _imports(tree, top_level_only=False):
            if name.split(".")[0] == "rich" or name.startswith(("forensics.cli", "forensics.render")):
                offenders.append(f"{rel}: {name}")
    assert offenders == []


def test_optional_dependencies_are_imported_lazily():
    offenders = []
    for rel, tree in _modules():
        for name in _imports(tree, top_level_only=True):
            if name.split(".")[0] in OPTIONAL:
                offenders.append(f"{rel}: {name}")
    assert offenders == []


def test_cli_modules_keep_heavy_imports_inside_handlers():
    # `forensics --help` imports every CLI module: numpy and rich must wait for the command that needs them.
    offenders = []
    for rel, tree in _modules():
        if rel.parts[0] != "cli":
            continue
        for name in _imports(tree, top_level_only=True):
            if name.split(".")[0] in {"numpy", "rich"} | OPTIONAL:
                offenders.append(f"{rel}: {name}")
    assert offenders == []


def test_library_never_prints_or_exits():
    # Core modules return result objects; only the CLI decides what reaches the terminal and the exit code.
    offenders = []
    for rel, tree in _modules():
        if rel.parts[0] in ("cli", "render") or rel.name == "__main__.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "exit"):
                offenders.append(f"{rel}:{node.lineno}: {node.func.id}()")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "exit"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "sys"):
                offenders.append(f"{rel}:{node.lineno}: sys.exit()")
    assert offenders == []


def test_command_homes_match_what_the_modules_register():
    from forensics.cli import COMMAND_HOMES, COMMAND_MODULES, build_parser

    registered = {}
    for module in COMMAND_MODULES:
        parser = build_parser.__globals__["ArgumentParser"](prog="x")
        sub = parser.add_subparsers()
        __import__(module, fromlist=["register"]).register(sub, [])
        for name in sub.choices:
            registered[name] = module
    assert registered == COMMAND_HOMES
    assert set(build_parser()._subparsers._group_actions[0].choices) == set(COMMAND_HOMES)
