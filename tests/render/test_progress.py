"""The progress bar: on stderr only at a terminal, never in a pipe or with --json; library code only calls back."""

from __future__ import annotations

import io
from types import SimpleNamespace

from forensics.io.dump import open_dump
from forensics.render import progress as progress_module
from forensics.render.console import Output


class Tty(io.StringIO):
    def isatty(self):
        return True


def _run(stderr, json_mode, monkeypatch):
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    out = Output(io.StringIO(), stderr)
    calls = []
    with progress_module.progress_for(out, SimpleNamespace(json=json_mode), "diff", 10, min_total=0) as progress:
        if progress is not None:
            for done in range(0, 11, 5):
                progress(done, 10)
                calls.append(done)
    return calls


def test_bar_only_at_a_terminal_and_never_with_json(monkeypatch):
    tty = Tty()
    assert _run(tty, False, monkeypatch) == [0, 5, 10]
    assert "diff" in tty.getvalue()
    assert _run(io.StringIO(), False, monkeypatch) == []   # a pipe
    assert _run(Tty(), True, monkeypatch) == []            # --json


def test_small_work_gets_no_bar():
    assert not progress_module.wants_progress(Tty(), total=1000)
    assert progress_module.wants_progress(Tty(), total=1 << 30)


def test_library_streaming_reports_progress():
    from forensics.compare.diff import diff_dumps
    from forensics.core.layout import RecordLayout

    a, b = open_dump("dumps/libedgetpu/input.bin"), open_dump("dumps/broken/input.bin")
    seen = []
    diff_dumps(a, b, RecordLayout(record_size=4), progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (a.size, a.size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
