"""Every result type that derives from forensics.core.serial.Serial reads back from its own document (built
from running the library on the bundled dumps), and every command whose result is one loads back from its saved
`--json` (forensics.reports.load) and renders the same terminal text."""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import pkgutil

import pytest

import forensics
from forensics.core import serial

LIB = "dumps/libedgetpu"
BROKEN = "dumps/broken"


def _serial_types() -> set[type]:
    for info in pkgutil.walk_packages(forensics.__path__, "forensics."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    found, todo = set(), [serial.Serial]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found and sub.__module__.startswith("forensics."):
                found.add(sub)
                todo.append(sub)
    return found


def _reports():
    """(command name, report) for the converted commands on the bundled dumps."""
    from forensics import reports

    return [
        ("crc pair", reports.crc(f"{LIB}/input.bin", "dumps/ours/input.bin")),
        ("crc chunks", reports.crc(f"{LIB}/input.bin", f"{BROKEN}/input.bin", chunk=960)),
        ("crc expect", reports.crc(f"{LIB}/input.bin", expect=0x12345678)),
        ("crc one", reports.crc(f"{LIB}/input.bin")),
    ]


def _saved(report) -> dict:
    from forensics.render.console import to_json

    return json.loads(to_json(report.to_dict()))


def _text(report) -> str:
    from forensics.render.console import make_console, print_all

    out = io.StringIO()
    print_all(make_console(out, width=100, color_system=None), report.renderables())
    return out.getvalue()


def _instances() -> dict[type, list]:
    """Real results of every Serial type, from the reports and the results they hold."""
    found: dict[type, list] = {}

    def walk(value):
        if isinstance(value, serial.Serial):
            found.setdefault(type(value), []).append(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    for _, report in REPORTS:
        walk(report.result)
    return found


REPORTS = _reports()
INSTANCES = _instances()


@pytest.mark.parametrize("kind", sorted(_serial_types(), key=lambda t: f"{t.__module__}.{t.__qualname__}"),
                         ids=lambda t: f"{t.__module__}.{t.__qualname__}")
def test_every_result_type_reads_back_from_its_document(kind):
    if kind.__module__.startswith("tests."):
        pytest.skip("a test's own type")
    assert kind in INSTANCES, f"no real {kind.__qualname__} built: add a case to _reports()"
    for result in INSTANCES[kind]:
        doc = json.loads(json.dumps(result.to_dict()))  # as a saved file holds it
        back = kind.from_dict(doc)
        assert back.to_dict() == result.to_dict()
        if _equal_by_fields(result):
            assert back == result


def _equal_by_fields(result) -> bool:
    """Fields a document leaves out for a reason (a .npy dump's format, pictures) make equality one-way."""
    return getattr(result, "source_format", "binary") == "binary"


@pytest.mark.parametrize("name, report", REPORTS, ids=[name for name, _ in REPORTS])
def test_a_saved_document_loads_back_and_renders_the_same(name, report):
    from forensics import reports

    loaded = reports.load(_saved(report))
    assert type(loaded) is type(report) and loaded.verdict == report.verdict
    assert loaded.exit_code == report.exit_code
    assert _text(loaded) == _text(report)
    assert _saved(loaded) == _saved(report)


def test_a_saved_file_loads_back(tmp_path):
    from forensics import reports
    from forensics.render.console import to_json

    report = reports.crc(f"{LIB}/input.bin", f"{BROKEN}/input.bin", chunk=960)
    path = tmp_path / "crc.json"
    path.write_text(to_json(report.to_dict()))
    assert _text(reports.load(path)) == _text(report)
