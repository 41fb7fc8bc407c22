"""The README's quick start: two set-up commands (`make demo`, `make test`), then the next command a user types
works (`source .venv/bin/activate`, the Windows line, or `make shell`), and `make demo` says what it is doing
while it installs. The Makefile is read with `make -n` (nothing runs) into a venv path that does not exist, as
on a fresh machine."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _quick_start() -> str:
    return README.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def _dry_run(target: str, tmp_path) -> list[str]:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "fresh-venv"
    r = subprocess.run(["make", "-n", "--no-print-directory", "-C", str(REPO), target, f"VENV={venv}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.splitlines() if not line.startswith("make[")]


def test_quick_start_is_two_commands():
    first_block = re.search(r"```\n(.*?)```", _quick_start(), re.S).group(1)
    assert first_block.split("\n")[:-1] == ["make demo", "make test"]


def test_quick_start_has_the_one_line_pip_install_beside_them():
    # the distribution's name, with the extras pyproject.toml defines (tests/house/test_architecture.py checks those)
    blocks = re.findall(r"```\n(.*?)```", _quick_start(), re.S)
    assert blocks[1].split("\n")[:-1] == ["pip install 'npu-forensics[all]'"]


def test_quick_start_says_how_to_get_forensics_on_path():
    text = _quick_start()
    assert "source .venv/bin/activate" in text
    assert ".venv\\Scripts\\activate" in text
    assert "make shell" in text


def test_make_demo_says_what_it_does_before_each_step(tmp_path):
    lines = _dry_run("demo", tmp_path)
    commands = [i for i, line in enumerate(lines) if not line.startswith(("echo ", "printf ", "touch "))]
    assert len(commands) >= 4, lines  # venv, pip upgrade, install, demo
    assert not any("[" in line for line in lines if " pip install" in line), "make demo installs the core only"
    for i in commands:
        assert i > 0 and lines[i - 1].startswith("echo "), f"no line says what `{lines[i]}` does"
    pip = [line for line in lines if " pip install" in line]
    assert pip and not any(re.search(r"\s(--quiet|-q)\b", line) for line in pip), pip
    assert any("forensics demo" in line or line.endswith(" demo") for line in lines)
    assert any("activate" in line for line in lines if line.startswith(("echo ", "printf "))), \
        "make demo should end by saying how to put forensics on PATH"


def test_make_shell_opens_a_shell_with_the_venv_on_path(tmp_path):
    lines = _dry_run("shell", tmp_path)
    venv = str(tmp_path / "fresh-venv")
    assert any("VIRTUAL_ENV=" in line and f"{venv}/bin" in line for line in lines), lines


def test_make_test_installs_every_extra(tmp_path):
    pip = [line for line in _dry_run("test", tmp_path) if " pip install" in line]
    assert any(line.endswith("-e '.[all,test]'") for line in pip), pip


def test_ci_runs_make_test_then_checks_the_wheel():
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()]
    assert ci[-2:] == ["make test", "make wheel"]
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "\ntest: setup\n\t$(BIN)/python -m pytest\n" in makefile  # the README's test command, as it is
    assert "\nwheel: setup\n\t$(BIN)/python tools/check_wheel.py\n" in makefile
