"""Shared test fixtures: the CLI runner and the real Coral data in ../shared (skipped when absent)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parent.parent

# Property tests must not pass or fail by luck: the suite runs them derandomized (each test's examples come
# from a seed fixed by the test itself), with no example database (nothing from earlier runs on this
# machine), no deadline and no too-slow health check (a loaded CI machine is slow, not wrong). `make fuzz`
# explores instead: FORENSICS_HYPOTHESIS_PROFILE=fuzz (random seeds, ten times the examples) or =dev
# (hypothesis' own defaults); a failure found there goes back into the test as an @example.
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("fuzz", derandomize=False, max_examples=100, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev")
settings.load_profile(os.environ.get("FORENSICS_HYPOTHESIS_PROFILE") or "ci")
FUZZ_FACTOR = 10  # the fuzz profile runs each property test on this many times the examples its settings fix


def pytest_collection_modifyitems(items):
    if os.environ.get("FORENSICS_HYPOTHESIS_PROFILE") != "fuzz":
        return
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is not None:
            test._hypothesis_internal_use_settings = settings(own, max_examples=own.max_examples * FUZZ_FACTOR)
SHARED_CORAL = Path(os.environ.get("FORENSICS_SHARED", REPO.parent / "shared")) / "data" / "coral"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*argv, width: int = 100) -> CliResult:
    """Run `forensics ARGV...` in-process with a fixed-width, colourless console."""
    from forensics.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    argv = [str(a) for a in argv]
    if "--help" not in argv and "-h" not in argv and len(argv) > 0 and not argv[0].startswith("-"):
        argv += ["--width", str(width), "--no-color"]
    code = main(argv, stdout=stdout, stderr=stderr)
    return CliResult(code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture
def cli():
    return run_cli


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    """Bad input: exit 2, exactly one line on stderr, no traceback, and the line says what is wrong."""
    assert result.code == 2, (result.code, result.out, result.err)
    lines = result.err.strip("\n").split("\n")
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in result.err, (fragment, result.err)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_CORAL.is_dir():
        pytest.skip("../shared/data/coral is absent (a fresh clone): real-model tests skipped")
    return SHARED_CORAL


@pytest.fixture(autouse=True, scope="session")
def _run_from_repo_root():
    """Tests name bundled files as `dumps/...`, as the README does; run them from the repository root."""
    old = os.getcwd()
    os.chdir(REPO)
    yield
    os.chdir(old)


def assert_golden(path, text: str) -> None:
    """Compare command output with a golden file, exactly.

    After a deliberate layout change: `FORENSICS_REGOLD=1 pytest ...` rewrites the golden files; review their
    diff before committing. On a mismatch ours is written beside the golden file as `NAME.actual.txt`.
    """
    path = Path(path)
    if os.environ.get("FORENSICS_REGOLD"):
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        path.with_name(path.stem + ".actual.txt").write_text(text, encoding="utf-8")
    assert text == expected, f"{path.name} differs: diff it with {path.stem}.actual.txt"


def saved_document(report) -> dict:
    """A report's --json as a saved file holds it (NaN as null, tuples as lists)."""
    import json

    from forensics.render.console import to_json

    return json.loads(to_json(report.to_dict()))


def rendered_text(report) -> str:
    """A report's terminal text at 100 columns, without colour."""
    from forensics.render.console import make_console, print_all

    out = io.StringIO()
    print_all(make_console(out, width=100, color_system=None), report.renderables())
    return out.getvalue()
