"""`forensics demo` runs the README's story, from any folder, on the dumps that ship with the package (the same
bytes as the repository's dumps/, which dumps/make_*.py write), as `make demo` does; and the wheel carries them."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.reports._demo import BUNDLED
from tests.conftest import REPO


def test_demo_runs_every_step_as_the_story_expects(cli):
    result = cli("demo", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["ok"] is True
    assert [s["exit"] for s in doc["steps"]] == [s["expected_exit"] for s in doc["steps"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert doc["directory"] == str(REPO / "forensics" / "data")  # the package's own copy, not the clone's dumps/
    text = cli("demo")
    assert "$ forensics diagnose dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin" in text.out
    assert "MATCH | 2 files, 307,200 bytes each, CRC32 0x0bc3f483" in text.out
    assert f"$ cd {REPO / 'forensics' / 'data'}" in text.out  # where those commands run as shown


def test_demo_runs_from_any_folder_and_says_where_its_commands_run(tmp_path):
    # a process in another folder, with this checkout on its path only: no file of the clone's dumps/ is needed
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONIOENCODING="utf-8")
    r = subprocess.run([sys.executable, "-m", "forensics", "demo", "--width", "80", "--no-color"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    cd = lines[1]
    assert cd.startswith("$ cd ") and Path(cd[5:]).joinpath("dumps", "ours", "input.bin").is_file()
    # every command is printed whole on its own line at 80 columns, and runs as printed from there
    commands = [line[2:] for line in lines if line.startswith("$ forensics ")]
    assert len(commands) == 8 and max(map(len, commands)) > 80
    import shlex

    first = subprocess.run([sys.executable, "-m", "forensics", *shlex.split(commands[0])[1:]], cwd=cd[5:], env=env,
                           capture_output=True, text=True)
    assert first.returncode == 0 and "MATCH | 2 files" in first.stdout
    assert list(tmp_path.iterdir()) == []


def test_demo_on_a_copy_names_it_as_given(cli, tmp_path):
    # `make demo` runs it on the clone's dumps/: the commands are then exactly the README's, with no `cd`
    result = cli("demo", "--dumps", "dumps")
    assert result.code == 0, result.err
    assert "$ cd" not in result.out
    assert "$ forensics anchors dumps/ours/convert_scores.bin --nonuniform --deps dumps/face_ssd" in result.out
    assert os.getcwd() == str(REPO)  # the demo changed back to where it was called from


def test_demo_of_a_folder_without_the_story_is_one_line(cli, tmp_path):
    from tests.conftest import assert_one_line_error

    assert_one_line_error(cli("demo", "--dumps", tmp_path), str(tmp_path), "holds no story")


@pytest.mark.parametrize("part", BUNDLED)
def test_the_package_ships_what_the_generators_make(part):
    # dumps/make_dumps.py, make_deps.py and make_link_dumps.py write both copies; the repository's dumps/ is
    # checked against a fresh run of each (tests/house/test_dumps.py, docs/test_evidence.py, link/test_link_docs.py)
    # and the package's copy against it, file by file
    shipped, made = REPO / "forensics" / "data" / "dumps" / part, REPO / "dumps" / part
    assert sorted(BUNDLED) == sorted(p.name for p in (REPO / "forensics" / "data" / "dumps").iterdir())
    assert sorted(p.name for p in shipped.iterdir()) == sorted(p.name for p in made.iterdir())
    for path in made.iterdir():
        assert filecmp.cmp(path, shipped / path.name, shallow=False), path.name


def test_the_package_data_glob_takes_every_shipped_file():
    tomllib = pytest.importorskip("tomllib")
    globs = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["forensics"]
    package = REPO / "forensics"
    taken = {p for glob in globs for p in package.glob(glob)}
    assert {p for p in (package / "data").rglob("*") if p.is_file()} == taken


def test_make_demo_installs_the_core_only_and_calls_it():
    makefile = Path("Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "$(FORENSICS) demo --dumps dumps" in demo and ".core" in demo.splitlines()[0]
    core = makefile.split("$(VENV)/.core:", 1)[1].split("\n\n", 1)[0]
    assert "pip install -e ." in core and "[" not in core.split("pip install -e", 1)[1].splitlines()[0]
