"""A saved diff / anchors / hexdump document loads back (forensics.reports.load) as far as it says: pictures are
named by their saved paths (their size only while the file is there), the --grid map is not in the document,
and a document saved before the keys reading back needs cannot be read back (TypeError, as load says)."""

from __future__ import annotations

import dataclasses

import pytest

from forensics import reports

from tests.conftest import rendered_text, saved_document

LIB = "dumps/libedgetpu"
BROKEN = "dumps/broken"


_saved, _text = saved_document, rendered_text


def test_a_loaded_report_names_its_pictures_and_their_size_only_while_they_are_there(tmp_path):
    pytest.importorskip("PIL")
    heat, plot = tmp_path / "heat.png", tmp_path / "plot.png"
    report = reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", deps="dumps/face_ssd",
                          heatmap=heat, plot=plot, limit=2)
    doc = _saved(report)
    loaded = reports.load(doc)
    assert _text(loaded) == _text(report) and f"wrote {heat} (" in _text(report)
    assert _saved(loaded) == doc
    heat.unlink()
    plot.unlink()
    text = _text(reports.load(doc))  # the files are gone: the saved paths, without a size nobody measured
    assert f"wrote {heat}\n" in text and f"wrote {plot}\n" in text
    assert _saved(reports.load(doc)) == doc


def test_a_loaded_grid_report_renders_all_but_the_grid_map():
    report = reports.anchors("dumps/ours/convert_scores.bin", deps="dumps/face_ssd", grid=True)
    loaded = reports.load(_saved(report))
    without_grid = dataclasses.replace(report, grid=False)
    assert _text(report) != _text(without_grid)  # the map is there when the command prints it
    assert _text(loaded) == _text(without_grid)
    assert _saved(loaded) == _saved(report)


def test_a_listed_anchor_keeps_its_place_and_prior_and_another_has_none():
    report = reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", deps="dumps/face_ssd",
                          limit=1)
    geometry = reports.load(_saved(report)).context.geometry
    listed = report.result.records[0].index
    assert geometry.where(listed) == report.context.geometry.where(listed) != f"#{listed}"
    assert geometry.prior(listed) == report.context.geometry.prior(listed)
    assert geometry.where(listed + 1) == f"#{listed + 1}" and geometry.prior(listed + 1) is None


@pytest.mark.parametrize("command, key", [("diff", "layout"), ("anchors", "window_records"),
                                          ("hexdump", "layout")])
def test_a_document_without_the_keys_reading_back_needs_is_refused(command, key):
    report = {"diff": lambda: reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"),
              "anchors": lambda: reports.anchors("dumps/ours/convert_scores.bin"),
              "hexdump": lambda: reports.hexdump(f"{LIB}/convert_scores.bin", anchor=3)}[command]()
    doc = _saved(report)
    del doc[key]
    with pytest.raises(TypeError):
        reports.load(doc)


def test_a_document_saved_without_stats_detail_still_loads_its_statistics():
    report = reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", limit=1)
    doc = _saved(report)
    del doc["stats_detail"]
    loaded = reports.load(doc)
    assert loaded.result.stats.max_abs == report.result.stats.max_abs
    assert loaded.judgement == report.judgement  # the saved judgement, as it was
