"""The investigation notebook runs top to bottom (nbclient + ipykernel) from any folder on the dumps that ship with
the package, shows each report once, leaves nothing behind, and tells the story's facts, checked against
independent sources: zlib for the CRCs, make_dumps.py's table for the anchors, the kernel for boxes. A report's
HTML escapes what the terminal escapes."""

from __future__ import annotations

import os
import zlib

import pytest

from tests.conftest import REPO

NOTEBOOK = REPO / "notebooks" / "investigation.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run top to bottom from a folder outside the repository, as a user's installed package runs
    it (this checkout's forensics on the kernel's path), with its own temporary directory."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("PIL")
    pytest.importorskip("pandas")
    elsewhere, temporary = tmp_path_factory.mktemp("elsewhere"), tmp_path_factory.mktemp("tmp")
    notebook = nbformat.read(str(NOTEBOOK), as_version=4)
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", "TMPDIR")}
    os.environ.update(PYTHONPATH=str(REPO), TMPDIR=str(temporary))
    try:
        client = nbclient.NotebookClient(notebook, timeout=180, kernel_name="python3",
                                         resources={"metadata": {"path": str(elsewhere)}})
        client.execute()  # raises CellExecutionError (naming the cell) when any cell fails
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook, elsewhere, temporary


@pytest.fixture(scope="module")
def outputs(executed):
    notebook = executed[0]
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        text, kinds = "", set()
        for out in cell.outputs:
            assert out.get("output_type") != "error", out
            text += out.get("text", "")
            data = out.get("data", {})
            kinds |= set(data)
            text += data.get("text/plain", "") if "image/png" not in data else ""
        cells.append((text, kinds))
    return cells


def test_every_report_is_shown_once(executed):
    # rich's own Jupyter display showed each report a second time beside its HTML (two rounds running)
    for cell in (c for c in executed[0].cells if c.cell_type == "code"):
        shown = [out for out in cell.outputs if "text/html" in out.get("data", {})]
        assert len(shown) <= 1, cell.source


def test_it_runs_from_anywhere_and_leaves_nothing_behind(executed):
    _, elsewhere, temporary = executed
    assert list(elsewhere.iterdir()) == [] and list(temporary.iterdir()) == []


def _cell(outputs, marker: str) -> str:
    hits = [text for text, _ in outputs if marker in text]
    assert hits, marker
    return hits[0]


def test_input_crcs_match_zlib(outputs):
    text = _cell(outputs, "libedgetpu == ours")
    for source in ("libedgetpu", "ours", "broken"):
        crc = zlib.crc32((REPO / "dumps" / source / "input.bin").read_bytes())
        assert f"dumps/{source}/input.bin" in text and f"0x{crc:08x}" in text
    assert "libedgetpu == ours: True" in text


def test_diff_and_nonuniform_anchors(outputs):
    import sys

    sys.path.insert(0, str(REPO / "dumps"))
    try:
        import make_dumps
    finally:
        sys.path.pop(0)
    assert "libedgetpu vs ours identical: True" in _cell(outputs, "identical:")
    assert f"first at byte {make_dumps.BROKEN_FROM_ANCHOR * 4}" in _cell(outputs, "libedgetpu vs broken")
    text = _cell(outputs, "non-uniform anchors")
    assert f"non-uniform anchors: {sorted(make_dumps.SCORE_RECORDS)}" in text
    assert "head-window trap: True" in text and "face score 0.99609375" in text


def test_decode_and_drawing(outputs):
    from forensics.decode.deps import read_deps
    from forensics.decode.report import decode_dumps

    text = _cell(outputs, "class 0  score")
    best = max(decode_dumps(read_deps(REPO / "dumps" / "face_ssd"), REPO / "dumps/ours/Squeeze1.bin",
                            REPO / "dumps/ours/convert_scores.bin").result.detections, key=lambda d: d.score)
    assert f"anchor {best.anchor}  class 0  score {best.score:.4f}" in text
    assert any("image/png" in kinds for _, kinds in outputs)
    assert f"drew anchor {best.anchor}" in _cell(outputs, "drew anchor")


def test_diagnose_and_stage_table(outputs):
    text = _cell(outputs, "-> fill, truncation, head_window")
    assert "dumps/broken/input.bin -> shift" in text and "dumps/ours/convert_scores.bin -> clean" in text
    table = _cell(outputs, "first divergent stage")
    assert "libedgetpu vs ours: every stage MATCH | first divergent stage: None" in table
    assert "first divergent stage: input" in table and "inputs differ" in table
    assert "raw:convert_scores" in table and "534 of 2,034 anchors differ" in table


def test_reports_render_as_tables(outputs):
    # The reports are the cells' results: shown as the CLI's tables in HTML, and as DataFrames.
    html = [text for text, kinds in outputs if "text/html" in kinds]
    assert any("<RecordsReport diff: exit_code=1>" in text for text in html)
    assert any("<CompareReport compare: exit_code=1>" in text for text in html)
    assert sum(1 for text, kinds in outputs if "text/html" in kinds and "summary" in text and "crc32_a" in text) == 1


def test_a_reports_html_escapes_controls_as_the_terminal_does(tmp_path):
    # A file name with U+202E (right-to-left override: it reorders what follows on screen) reached the notebook's
    # HTML raw while the terminal showed it escaped; one console serves both now.
    from forensics import reports
    from tests.conftest import run_cli

    a, b = tmp_path / "a\u202egnp.bin", tmp_path / "b.bin"
    a.write_bytes(b"\x01\x02\x03\x04" * 8)
    b.write_bytes(b"\x01\x02\x03\x04" * 8)
    html = reports.crc(a, b)._repr_html_()
    terminal = run_cli("crc", a, b).out
    assert "\u202e" not in html and "\u202e" not in terminal
    assert "a\\u202egnp.bin" in html and "a\\u202egnp.bin" in terminal
