"""CONTRIBUTING.md's map matches the tree: every forensics/*.py module and every package appears in it, and
everything it names exists. Read generically (any `name.py` or `name/` word in the map's code block), so a
module another change adds only needs its line in the map; tests/house/test_architecture.py checks the files
inside the packages and the layer order."""

from __future__ import annotations

import re

from tests.conftest import REPO

PACKAGE = REPO / "forensics"


def _map_words() -> set[str]:
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("## Map", 1)[1].split("```", 2)[1]
    return set(re.findall(r"(?<![\w/.])([A-Za-z_]\w*(?:\.py|/))", block))


def _tree() -> tuple[set[str], set[str]]:
    modules = {p.name for p in PACKAGE.glob("*.py")}
    packages = {p.name + "/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return modules, packages


def test_every_top_level_module_and_package_is_in_the_map():
    words = _map_words()
    modules, packages = _tree()
    missing = sorted((modules | packages) - words)
    assert not missing, f"not in CONTRIBUTING.md's map: {missing}"


def test_every_package_the_map_names_exists_and_its_modules_exist_somewhere():
    words = _map_words()
    modules, packages = _tree()
    named_packages = {w for w in words if w.endswith("/") and w != "forensics/"}
    nested = {p.name + "/" for p in PACKAGE.rglob("__init__.py") for p in [p.parent]}
    assert named_packages <= nested, f"packages in the map that are not in forensics/: {sorted(named_packages - nested)}"
    every_file = {p.name for p in PACKAGE.rglob("*.py")}
    ghosts = sorted(w for w in words if w.endswith(".py") and w not in every_file)
    assert not ghosts, f"modules in CONTRIBUTING.md's map that no longer exist: {ghosts}"
