"""The house rules that a parser can check: data flows down the layers (no module imports one above it),
the library never imports the CLI or rich, optional dependencies are imported lazily (inside functions),
so the core works with numpy + rich + flatbuffers, and CONTRIBUTING's map lists every module in layer order."""

import ast
import pathlib
import re
import shutil

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "forensics"

# The package's layers, bottom first: a module may import (at the top or inside a function) modules of its
# own package and of the packages below, never above. Each entry is a package under forensics/ (the tree is the
# layer map); the top holds only `__init__.py` (the version: core) and `__main__.py` (the CLI's). CONTRIBUTING.md's
# map has one line per package in this order.
LAYERS = (
    ("core", ("__init__.py", "core/")),
    ("io", ("io/",)),
    ("compare", ("compare/",)),
    ("buffer", ("buffer/",)),
    ("model", ("model/",)),
    ("decode", ("decode/",)),
    ("diagnose", ("diagnose/",)),
    ("link", ("link/",)),
    ("csr", ("csr/",)),
    ("runs", ("runs/",)),
    ("render", ("render/",)),
    ("reports", ("reports/",)),
    ("cli", ("cli/", "__main__.py")),
)
OPTIONAL = {"ai_edge_litert", "tflite_runtime", "PIL", "matplotlib", "pandas", "pyarrow", "nbclient", "nbformat",
            "dask", "distributed", "fsspec", "faster_coco_eval"}


def _absolute(rel, node) -> str:
    """The module an ImportFrom names, with a relative import (`from .render import style`, level > 0) resolved
    against the package of the file at `rel` (a path under forensics/), as Python resolves it."""
    if node.level == 0:
        return node.module or ""
    package = ["forensics", *rel.parts[:-1]]  # a package's __init__.py: its own package
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(tree, top_level_only, rel=None):
    """Every module name an import statement names (relative ones resolved when `rel` is given), and for
    `from X import y` also X.y, which may be a module."""
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0 and rel is None:
                raise AssertionError("a relative import needs the importing file's path")
            module = _absolute(rel, node)
            if module:
                yield module
            if node.level > 0:
                for alias in node.names:
                    yield f"{module}.{alias.name}" if module else alias.name


def _modules(package=PACKAGE):
    for path in sorted(package.rglob("*.py")):
        yield path.relative_to(package), ast.parse(path.read_text(encoding="utf-8"))


def _library_imports_of_cli_or_rendering(package=PACKAGE) -> list:
    # forensics.reports composes the library and the renderers (its reports render themselves): above render.
    offenders = []
    for rel, tree in _modules(package):
        if rel.parts[0] in ("cli", "render", "reports") or rel.name == "__main__.py":
            continue
        for name in _imports(tree, top_level_only=False, rel=rel):
            if name.split(".")[0] == "rich" or name.startswith(("forensics.cli", "forensics.render")):
                offenders.append(f"{rel}: {name}")
    return sorted(set(offenders))


def test_library_never_imports_cli_or_rendering():
    assert _library_imports_of_cli_or_rendering() == []


def test_optional_dependencies_are_imported_lazily():
    offenders = []
    for rel, tree in _modules():
        for name in _imports(tree, top_level_only=True, rel=rel):
            if name.split(".")[0] in OPTIONAL:
                offenders.append(f"{rel}: {name}")
    assert offenders == []


def test_cli_modules_keep_heavy_imports_inside_handlers():
    # `forensics --help` imports every CLI module: numpy and rich must wait for the command that needs them.
    offenders = []
    for rel, tree in _modules():
        if rel.parts[0] != "cli":
            continue
        for name in _imports(tree, top_level_only=True, rel=rel):
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


def _registered() -> dict:
    """command -> the CLI module whose register() adds it, in the order the modules add them."""
    from forensics.cli import COMMAND_MODULES, build_parser

    registered = {}
    for module in COMMAND_MODULES:
        parser = build_parser.__globals__["ArgumentParser"](prog="x")
        sub = parser.add_subparsers()
        __import__(module, fromlist=["register"]).register(sub, [])
        for name in sub.choices:
            registered[name] = module
    return registered


def test_the_command_table_is_what_the_modules_register_in_its_order():
    # One entry per command (forensics/reports/commands.py): its group's register() builds its parser, no
    # module registers a command the table lacks, and `forensics --help` lists them in the table's order.
    from forensics.cli import build_parser
    from forensics.reports.commands import COMMANDS

    assert list(_registered().items()) == [(c.name, c.cli_module) for c in COMMANDS]
    assert list(build_parser()._subparsers._group_actions[0].choices) == [c.name for c in COMMANDS]


def test_every_entry_names_its_report_function_and_types_in_its_group_module():
    import importlib
    import inspect

    from forensics.cli import _command_parser, build_parser
    from forensics.reports.commands import COMMANDS

    every = build_parser()
    for command in COMMANDS:
        module = importlib.import_module(command.reports_module)
        for name in (command.function, *command.types):
            assert hasattr(module, name), (command, name)
        # the entry's positional arguments are the parser's, in order, and `*name` is the function's *args
        parser = _command_parser(every, command.name)
        assert [a.dest for a in parser._actions if not a.option_strings] == \
            [name.lstrip("*") for name in command.positional], command
        parameters = inspect.signature(getattr(module, command.function)).parameters.values()
        spread = [p.name for p in parameters if p.kind is p.VAR_POSITIONAL]
        assert spread == [n[1:] for n in command.positional if n.startswith("*")], command
        if command.progress is not None:
            assert "progress" in {p.name for p in parameters}, command
        for dest, kind in command.outputs:
            assert kind in ("file", "dir", "into", "run") and any(a.dest == dest for a in parser._actions), \
                (command, dest)
        assert set(command.beside) <= {dest for dest, _ in command.outputs}, command


def test_the_group_modules_are_the_tables_groups():
    # forensics/reports/_<group>.py and forensics/cli/<group>.py for every group of the table, and no other
    from forensics.reports.commands import COMMANDS

    groups = {c.group for c in COMMANDS}
    assert {p.stem[1:] for p in (PACKAGE / "reports").glob("_*.py") if p.stem != "__init__"} == groups
    assert {p.stem for p in (PACKAGE / "cli").glob("*.py")} - {"__init__", "args"} == groups


def _layer_of(rel) -> int:
    path = rel.as_posix()
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if path == member or (member.endswith("/") and path.startswith(member)):
                return index
    raise AssertionError(f"forensics/{path} is in no layer: add it to LAYERS in tests/house/test_architecture.py "
                         "and to CONTRIBUTING.md's map")


def _module_file(name: str, package=PACKAGE):
    """forensics.a.b -> a/b.py or a/b/__init__.py (relative to forensics/), None when it is not a module."""
    parts = name.split(".")[1:]
    for candidate in (package.joinpath(*parts).with_suffix(".py") if parts else None,
                      package.joinpath(*parts, "__init__.py")):
        if candidate is not None and candidate.is_file():
            return candidate.relative_to(package)
    return None


def _forensics_imports(tree, rel, package=PACKAGE):
    # `from forensics.x import y` (or `from .x import y`): y may be a module (forensics.x.y) or a name in x
    for name in set(_imports(tree, top_level_only=False, rel=rel)):
        if name == "forensics" or name.startswith("forensics."):
            target = _module_file(name, package)
            if target is not None:
                yield target


def _upward_imports(package=PACKAGE) -> list:
    offenders = []
    for rel, tree in _modules(package):
        own = _layer_of(rel)
        for target in set(_forensics_imports(tree, rel, package)):
            if _layer_of(target) > own:
                offenders.append(f"forensics/{rel.as_posix()} ({LAYERS[own][0]}) imports "
                                 f"forensics/{target.as_posix()} ({LAYERS[_layer_of(target)][0]})")
    return sorted(offenders)


def test_every_import_goes_down_the_layers():
    assert _upward_imports() == []


@pytest.mark.parametrize("planted", [
    "from ..render.style import wrote",            # a relative import one package up
    "from .. import reports",                      # a package reached through `from .. import`
    "from forensics.render.style import wrote",    # the absolute spelling
    "import forensics.cli.args",
])
def test_layer_checks_catch_a_planted_upward_import(tmp_path, planted):
    # Planted into a copy of the tree (never the real one): a library module importing the CLI, the renderers
    # or the reports must fail the layer test, however the import is spelled; the untouched copy passes.
    copy = tmp_path / "forensics"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    assert _upward_imports(copy) == []
    target = copy / "compare" / "stats.py"
    target.write_text(target.read_text(encoding="utf-8") + f"\n\ndef _planted():\n    {planted}\n",
                      encoding="utf-8")
    offenders = _upward_imports(copy)
    assert len(offenders) == 1 and offenders[0].startswith("forensics/compare/stats.py (compare) imports"), offenders
    if "reports" not in planted:  # the CLI and the renderers are also named by the library rule
        library = _library_imports_of_cli_or_rendering(copy)
        assert library and all(line.startswith("compare/stats.py: forensics.") for line in library), library


def test_relative_imports_inside_a_subpackage_resolve_to_its_siblings(tmp_path):
    # `from ..render import style` in forensics/runs/compare.py is forensics.render.style, and `from .run
    # import x` in forensics/runs/batch.py is forensics.runs.run (a sibling: not an offence).
    rel = pathlib.PurePosixPath("runs/compare.py")
    names = set(_imports(ast.parse("from ..render import style\nfrom .run import Run\nfrom . import batch"),
                         top_level_only=False, rel=rel))
    assert {"forensics.render", "forensics.render.style", "forensics.runs.run", "forensics.runs.batch"} <= names


def _contributing_map() -> list:
    """The packages CONTRIBUTING.md's map lists, in order: each line of the map's block that starts with a
    package (`core/`) or a top-level module (`__main__.py`), then its description."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("## Map", 1)[1].split("```", 2)[1]
    listed = []
    for line in block.splitlines()[2:]:  # the first line is the fence's language tag, then `forensics/`
        words = line.split()
        if words and len(line) - len(line.lstrip()) == 2 and (words[0].endswith("/") or words[0].endswith(".py")):
            listed.append(words[0])
    return listed


def test_contributing_map_lists_every_package_in_layer_order():
    listed = _contributing_map()
    on_disk = sorted({rel.parts[0] + "/" if len(rel.parts) > 1 else rel.name for rel, _ in _modules()})
    assert sorted(listed) == on_disk, "CONTRIBUTING.md's map and the packages under forensics/ differ"
    assert len(listed) == len(set(listed)), "a package is listed twice in CONTRIBUTING.md's map"
    layers = [_layer_of(pathlib.PurePosixPath(path + ("x.py" if path.endswith("/") else ""))) for path in listed]
    assert layers == sorted(layers), "CONTRIBUTING.md's map is not in the layer order of LAYERS"


def test_the_top_of_the_package_holds_only_the_version_and_the_entry_point():
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_install_hints_name_the_distribution_and_extras_that_exist():
    # `pip install 'npu-forensics[X]'` in a message, the README or a docs page must name the distribution (the
    # package index's `forensics` is another project) and an extra pyproject.toml defines.
    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    texts = [path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))]
    texts += [path.read_text(encoding="utf-8") for path in [REPO / "README.md", REPO / "CONTRIBUTING.md",
                                                             *sorted((REPO / "docs").glob("*.md"))]]
    hints = [hint for text in texts for hint in re.findall(r"pip install -?e? ?'?\"?([\w.-]+)\[([\w,]+)\]", text)]
    # (`pip install -e ".[all,test]"` in a clone names the checkout itself)
    assert hints and {name for name, _ in hints} - {"."} == {project["name"]} == {"npu-forensics"}, hints
    named = {extra for _, group in hints for extra in group.split(",")}
    assert named <= set(project["optional-dependencies"]), sorted(named - set(project["optional-dependencies"]))
    from forensics.cli import DISTRIBUTION

    assert DISTRIBUTION == project["name"]
