"""Fixtures for the csr tests: the open-sequence traces on disk and a CLI with the csr command."""

from __future__ import annotations

import pytest

from tests.csr.traces import driver_open_trace, libedgetpu_open_trace


@pytest.fixture
def open_traces(tmp_path):
    a = tmp_path / "libedgetpu.log"
    b = tmp_path / "driver.log"
    a.write_text(libedgetpu_open_trace())
    b.write_text(driver_open_trace())
    return a, b


@pytest.fixture
def csr_cli(cli, monkeypatch):
    """`forensics ...` in-process with only the csr command registered, so these tests do not depend on
    the other command modules importing cleanly (test_registered checks the real registration)."""
    import forensics.cli as cli_module

    monkeypatch.setattr(cli_module, "COMMAND_MODULES", ("forensics.cli.csr",))
    return cli
