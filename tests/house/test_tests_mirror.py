"""The tests mirror the package: a test of forensics/<package>/<module>.py is tests/<package>/test_<module>.py,
beside a few named folders that are no package (the C header, the docs, the house rules, golden text); no test
sits at tests/ itself, where only the shared conftest and support modules live."""

from __future__ import annotations

import sys
from collections import Counter

from tests.conftest import REPO

TESTS = REPO / "tests"
# The folders of tests/ that are not a package of forensics/, each with what it holds.
NAMED = {
    "c": "the C header c/forensics_run.h, built and run",
    "docs": "the README, docs/*.md, CONTRIBUTING.md and the notebook, run as written",
    "house": "the repository's own rules: layers, dead code, determinism, verdict words, bundled dumps, this file",
    "golden": "golden text of the commands' tables (tests/cli/test_golden.py, tests/decode/test_decode_golden.py)",
}


def _packages() -> set[str]:
    return {p.name for p in (REPO / "forensics").iterdir() if (p / "__init__.py").is_file()}


def _folders() -> list[str]:
    return sorted(p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))


def test_every_folder_of_tests_is_a_package_or_named():
    packages = _packages()
    assert not set(NAMED) & packages, "a named folder shadows a package's name"
    strays = [name for name in _folders() if name not in packages and name not in NAMED]
    assert not strays, f"tests/ folders that are neither a forensics package nor named in NAMED: {strays}"


def test_no_test_module_sits_at_the_top_of_tests():
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert not top, f"move these into tests/<package>/ (or tests/cli, tests/docs, tests/house): {top}"


def test_a_folder_is_a_python_package_unless_its_name_is_the_standard_librarys():
    # pytest imports a test of a folder with __init__.py as `<folder>.test_x` (tests/ is no package): a folder named
    # like a standard module (io) must stay without one, or `import io.test_dump` finds the standard io first
    wrong = []
    for name in _folders():
        folder = TESTS / name
        if not any(folder.glob("*.py")):
            continue
        has_init = (folder / "__init__.py").is_file()
        if has_init == (name in sys.stdlib_module_names):
            wrong.append(f"{name}: {'has' if has_init else 'lacks'} __init__.py")
    assert not wrong, wrong


def test_test_modules_without_a_package_have_names_of_their_own():
    # without __init__.py pytest imports tests/io/test_dump.py as plain `test_dump`: two such names would collide
    rootless = [p for name in _folders() if not (TESTS / name / "__init__.py").is_file()
                for p in (TESTS / name).glob("test_*.py")]
    twice = sorted(name for name, n in Counter(p.name for p in rootless).items() if n > 1)
    assert not twice, f"test modules of folders without __init__.py that share a name: {twice}"
