"""repeat, tolerance, capture --runtime all: repeated runs of one input, and the reference runtimes' own noise."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.reports.base import Report, spellings


@dataclass(frozen=True, repr=False)
class RepeatReport(Report):
    html: str | None = None
    junit: str | None = None

    RESULT = "forensics.runs.repeat:RepeatResult"

    @classmethod
    def from_dict(cls, doc: dict) -> "RepeatReport":
        import dataclasses

        return dataclasses.replace(super().from_dict(doc), html=doc.get("html"), junit=doc.get("junit"))

    ROWS_KEY = "runs"  # the document's list of rows (rows_key_of)

    def to_dict(self) -> dict:
        doc = self._sources(self.result.to_dict())
        for key in ("html", "junit"):
            if getattr(self, key):
                doc[key] = getattr(self, key)
        return doc

    def renderables(self) -> list:
        from forensics.render.repeat import render_repeat

        return render_repeat(self.result, self.judgement, outputs=tuple(p for p in (self.html, self.junit) if p))


@spellings()
def repeat(*runs, reference=None, html=None, junit=None, scheduler: str = "local", workers: int | None = None,
           verify_files: bool = False, stall_timeout: float | None = None, progress=None) -> RepeatReport:
    """`forensics repeat RUN... [--reference RUN]`: N runs of one input (runs or folders of runs, in the order
    they ran): per buffer the modal content, per stage the divergence rate, each outlier's first divergent
    stage, its finding there and how it depends on the runs before it (forensics.runs.repeat). `html` / `junit`
    write the page and the JUnit XML; `scheduler` / `workers` / `verify_files` as compare --batch."""
    from forensics.runs import usecases

    result, judgement = usecases.repeat(runs, reference=reference, scheduler=scheduler, workers=workers,
                                        verify_files=verify_files, stall_timeout=stall_timeout, progress=progress,
                                        writes=tuple(p for p in (html, junit) if p))
    from forensics.io.outputs import write_text_atomic

    if html:
        from forensics.render.repeat import html_repeat

        write_text_atomic(html, html_repeat(result, judgement))
    if junit:
        from forensics.render.repeat import junit_repeat

        write_text_atomic(junit, junit_repeat(result, judgement))
    return RepeatReport("repeat", result, judgement=judgement, warnings=result.warnings, rows_key="runs",
                        html=os.fspath(html) if html else None, junit=os.fspath(junit) if junit else None)


class ToleranceReport(Report):
    RESULT = "forensics.runs.noise:SpreadResult"

    ROWS_KEY = "tensors"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.repeat import render_tolerance

        return render_tolerance(self.result, self.judgement)


@spellings()
def tolerance(*runs) -> ToleranceReport:
    """`forensics tolerance RUN RUN [RUN...]`: per tensor the spread between reference runs of one model and
    input (`capture --runtime all`) and the `--tolerance TENSOR=SPEC` flags compare takes for it
    (forensics.runs.noise)."""
    from forensics.runs import usecases

    result, judgement = usecases.tolerance(runs)
    return ToleranceReport("tolerance", result, judgement=judgement, rows_key="tensors")


class CaptureRuntimesReport(Report):
    RESULT = "forensics.runs.runtimes:CaptureRuntimesResult"

    ROWS_KEY = "runs"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.repeat import render_capture_runtimes

        return render_capture_runtimes(self.result)


def capture_all_runtimes(*, model, output, source=None, image=None, input=None,  # noqa: A002
                         resampling: str = "lanczos", tail_only: bool = False, delegate=None, replace: bool = False,
                         images=None) -> CaptureRuntimesReport:
    """`capture --runtime all`: one run per reference runtime this machine has, as OUTPUT/<runtime>
    (forensics.runs.usecases.capture); forensics.reports.capture calls it for `runtime="all"`."""
    from forensics.runs import usecases

    result = usecases.capture(model, output, source=source, image=image, input=input, resampling=resampling,
                              tail_only=tail_only, delegate=delegate, replace=replace, images=images, runtime="all")
    return CaptureRuntimesReport("capture", result, rows_key="runs")  # the tables say which were skipped, and why
