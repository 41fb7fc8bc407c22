"""forensics.runs.usecases: the runs commands' rules hold in the library call, before any run is read or any
model run (capture --runtime all, --images, repeat's pages checked writable first)."""

from __future__ import annotations

import pytest

from forensics.core.errors import InputError
from forensics.runs import usecases


def test_capture_refuses_what_its_modes_cannot_take(tmp_path):
    model = tmp_path / "never-opened.tflite"  # each rule holds before the model is read
    with pytest.raises(InputError, match="all writes one run per runtime"):
        usecases.capture(model, tmp_path / "out", runtime="all", images=tmp_path)
    with pytest.raises(InputError, match="names each run after its runtime"):
        usecases.capture(model, tmp_path / "out", runtime="all", source="mine")
    with pytest.raises(InputError, match="resumes"):
        usecases.capture(model, tmp_path / "out", images=tmp_path, replace=True)


def test_repeat_checks_its_pages_before_reading_a_run(tmp_path):
    with pytest.raises(InputError, match="repeat needs the runs"):
        usecases.repeat(())
    with pytest.raises(InputError) as caught:  # the runs do not exist: the unwritable page is said first
        usecases.repeat([tmp_path / "no-run"], writes=(tmp_path / "missing-dir" / "page.html",))
    assert "missing-dir" in str(caught.value)
    with pytest.raises(InputError, match="tolerance needs reference runs"):
        usecases.tolerance(())


def test_ingest_from_arrays_takes_one_file(tmp_path):
    with pytest.raises(InputError, match="brings in one file's arrays"):
        usecases.ingest(tmp_path / "run", ["a.npz", "b.npz"], from_format="npz", source="x")
    with pytest.raises(InputError, match="needs .*source"):
        usecases.ingest(tmp_path / "run", "input=x.bin")
