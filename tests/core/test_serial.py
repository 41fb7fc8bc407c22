"""The one encoder and decoder of result dataclasses: a document is the fields, and it reads back."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.verdict import Verdict


def _crc(value: int) -> str:
    return f"0x{value:08x}"


@dataclass(frozen=True)
class Lane(serial.Serial):
    index: int
    name: str | None = None


@dataclass(frozen=True)
class Result(serial.Serial):
    JSON_DERIVED = ("passed",)

    verdict: Verdict
    crc32: int = field(metadata=serial.json(encode=_crc, decode=lambda s: int(s, 16)))
    lanes: tuple[Lane, ...] = ()
    sizes: dict[str, int] = field(default_factory=dict)
    ratio: float | None = None
    picture: object = field(default=None, metadata=serial.json(skip=True))
    label: str = field(default="", metadata=serial.json("name"))

    @property
    def passed(self) -> bool:
        return self.verdict.passed


def test_a_result_is_its_fields_and_reads_back():
    result = Result(Verdict.WITHIN, 0x1A2B3C4D, (Lane(0, "background"), Lane(2)), {"a": 4}, 0.5, object(), "x")
    doc = result.to_dict()
    assert doc == {"verdict": "WITHIN TOLERANCE", "crc32": "0x1a2b3c4d",
                   "lanes": [{"index": 0, "name": "background"}, {"index": 2, "name": None}],
                   "sizes": {"a": 4}, "ratio": 0.5, "name": "x", "passed": True}
    back = Result.from_dict(doc)
    assert back == dataclasses.replace(result, picture=None)
    assert back.verdict is Verdict.WITHIN and isinstance(back.lanes[0], Lane)
    assert serial.round_trip(result)


def test_numbers_from_numpy_and_non_finite_floats_are_json():
    assert serial.encode(np.float32(0.25)) == 0.25 and serial.encode(np.int64(7)) == 7
    assert serial.encode(np.arange(3, dtype=np.uint8)) == [0, 1, 2]
    assert serial.encode(float("nan")) is None and serial.encode(b"\x01\xff") == "01ff"
    assert Result.from_dict({"verdict": "DIFFER", "crc32": "0x00000001", "ratio": 1}).ratio == 1.0


def test_a_document_of_the_wrong_shape_is_refused():
    import pytest

    with pytest.raises(TypeError):
        Result.from_dict(["not", "an", "object"])
    with pytest.raises(ValueError):
        Result.from_dict({"verdict": "NO SUCH VERDICT", "crc32": "0x0"})


def test_a_saved_document_that_names_no_report_is_refused(tmp_path):
    import json

    import pytest

    from forensics import reports
    from forensics.core.errors import InputError

    path = tmp_path / "x.json"
    path.write_text(json.dumps({"verdict": "MATCH"}))
    with pytest.raises(InputError, match="names no report type"):
        reports.load(path)
    path.write_text("{")
    with pytest.raises(InputError, match="malformed"):
        reports.load(path)
    with pytest.raises(InputError):
        reports.load({"report": "os.system"})


@dataclass(frozen=True)
class _Sized(serial.Serial):
    JSON_DERIVED = ("double", ("twice", "double"))
    JSON_DERIVED_OPTIONAL = ("half",)
    JSON_ORDER = ("double", "size")

    size: int
    offset: int = field(default=0, metadata=serial.json(omit=lambda v: v == 0))
    lsb: int | None = field(default=None, metadata=serial.json(when=lambda r: r.size > 1))

    @property
    def double(self) -> int:
        return 2 * self.size

    @property
    def half(self) -> int | None:
        return self.offset // 2 if self.offset else None


def test_defaults_left_out_fields_of_one_kind_and_the_key_order():
    assert list(_Sized(1, 0, None).to_dict()) == ["double", "size", "twice"]
    doc = _Sized(2, 8, None).to_dict()
    assert list(doc) == ["double", "size", "offset", "lsb", "twice", "half"] and doc["offset"] == 8
    assert doc["lsb"] is None and doc["twice"] == 4
    assert doc["half"] == 4
    assert _Sized.from_dict(_Sized(1).to_dict()) == _Sized(1)
    assert _Sized.from_dict(doc) == _Sized(2, 8, None)


@dataclass(frozen=True)
class _Hinted(serial.Serial):
    JSON_ORDER = ("kind", "hint", "command")

    kind: str
    hint: str = field(default="", metadata=serial.json(
        write=lambda r: f"{r.hint}: {r.command}" if r.command else r.hint,
        read=lambda doc: doc["hint"].removesuffix(f": {doc['command']}") if doc.get("command") else doc["hint"]))
    details: dict = field(default_factory=dict, metadata=serial.json(spread=True))
    command: str = ""


def test_a_value_written_from_the_whole_result_and_keys_spread_into_the_document():
    result = _Hinted("shift", "look", {"by": 4, "lanes": [1, 2]}, "forensics diff A B")
    doc = result.to_dict()
    assert doc == {"kind": "shift", "hint": "look: forensics diff A B", "command": "forensics diff A B", "by": 4,
                   "lanes": [1, 2]}
    assert list(doc)[:3] == ["kind", "hint", "command"]
    assert _Hinted.from_dict(doc) == result
