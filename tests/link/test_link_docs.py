"""docs/link.md's walk-through on the bundled dumps/link files: the files are what their generator makes, and
what the page says of them holds (tests/docs/test_readme.py runs the page's commands and checks their output)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import REPO
from tests.link import driver

MODEL = "dumps/link/tiny_edgetpu.tflite"


def _generator():
    sys.path.insert(0, str(REPO / "dumps"))
    try:
        import make_link_dumps
    finally:
        sys.path.remove(str(REPO / "dumps"))
    return make_link_dumps


def test_the_bundled_link_dumps_are_current():
    for name, blob in _generator().files().items():
        assert (REPO / "dumps" / "link" / name).read_bytes() == blob, name


def test_the_seed_drivers_link_is_what_the_page_says(cli):
    d = json.loads(cli("link", MODEL, "--check", "dumps/link/seed_driver_0_0.bin", "--json").out)
    assert d["verdict"] == "MISLINKED" and d["exit_code"] == 1
    gen = _generator()
    inputs = [name for name, _ in gen.INPUTS]
    aligned = {f["name"]: f for f in d["findings"] if f["kind"] == "byte_aligned"}
    assert set(aligned) == set(inputs) | {"Squeeze1", "convert_scores", "parameter"}
    for name in inputs:  # the one input address, read 6 bits off: bit 57 set
        assert aligned[name]["meant"] == hex(driver.CONSOLE["input"]) and int(aligned[name]["reads"], 16) == 0x0200000000022000
    assert aligned["convert_scores"]["meant"] == hex(driver.output_address(gen.OUTPUTS, "convert_scores",
                                                                          driver.CONSOLE["output"]))
    illegal = {f["name"] for f in d["findings"] if f["kind"] == "illegal_address"}
    assert illegal == set(inputs) | {"Squeeze1", "convert_scores"}
    (aliased,) = [f for f in d["findings"] if f["kind"] == "aliased"]
    assert sorted(aliased["names"]) == sorted(inputs) and aliased["same_address"]
    cache = json.loads(cli("link", MODEL, "--check", "dumps/link/seed_driver_1_0.bin", "--json").out)
    assert [f["kind"] for f in cache["findings"]] == ["byte_aligned", "illegal_address"]


def test_libedgetpus_links_are_linked(cli):
    good = json.loads(cli("link", MODEL, "--check", "dumps/link/libedgetpu_0_0.bin", "--json").out)
    assert good["verdict"] == "LINKED" and good["findings"] == [] and good["notes"] == []
    assert good["addresses"]["output"] == {n: [hex(a)] for n, a in _generator().LIBEDGETPU.items()
                                           if n in ("Squeeze1", "convert_scores")}
    cache = json.loads(cli("link", MODEL, "--check", "dumps/link/libedgetpu_1_0.bin", "--json").out)
    assert cache["executable"] == {"index": 1, "type": "PARAMETER_CACHING"} and cache["verdict"] == "LINKED"


def test_forensics_link_writes_the_bundled_libedgetpu_link(tmp_path, cli):
    out = tmp_path / "expected.bin"
    r = cli("link", MODEL, "--executable", "0", "--input", "0=0x8000000000400040", "--input",
            "...tV1/Conv2d_13_pointwise/Relu6 (+fused)=0x8000000000440000", "--output", "Squeeze1=0x8000000000480000",
            "--output", "scores=0x8000000000482000", "-o", out)
    assert r.code == 0, r.err
    assert out.read_bytes() == Path(REPO / "dumps/link/libedgetpu_0_0.bin").read_bytes()


def test_the_page_runs_its_commands():
    from tests.docs.test_readme import EXAMPLES

    runs = [e for e in EXAMPLES if e.page == "docs/link.md"]
    assert len([e for e in runs if e.expected]) >= 7  # the walk-through's `$` commands and what they print
    assert any("seed_driver_0_0.bin" in e.command and e.expected for e in runs)
