"""capture, ingest, export, compare: runs of every stage, and two (or a farm of) runs compared."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.reports.base import Report, spellings
from forensics.core.options import each
from forensics.core.verdict import Verdict


class CaptureReport(Report):
    RESULT = "forensics.runs.capture:CaptureResult"

    ROWS_KEY = "buffers"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.runs import render_capture

        return render_capture(self.result)


class CaptureManyReport(Report):
    RESULT = "forensics.runs.capture_many:CaptureManyResult"

    @classmethod
    def from_dict(cls, doc: dict) -> "CaptureManyReport":
        import dataclasses

        report = super().from_dict(doc)  # its exit code is the result's (an image failed: 2), as capture sets it
        return dataclasses.replace(report, exit_code=report.result.exit_code, warnings=report.result.warnings)

    def renderables(self) -> list:
        from forensics.render.runs import render_capture_many

        return render_capture_many(self.result)


@spellings()
def capture(*, model, output, source: str | None = None, image=None, input=None,  # noqa: A002
            resampling: str = "lanczos", tail_only: bool = False, delegate=None,
            replace: bool = False, images=None, progress=None, runtime=None) -> CaptureReport | CaptureManyReport:
    """`forensics capture --model M -o RUN`: run the model in LiteRT and record every stage as a run;
    with `images` (a folder or a list file), one run per image under `output` (progress(images_done, images));
    `runtime` one of forensics.model.runtime.REFERENCES, or all: one run per runtime (forensics.reports._repeat)."""
    if runtime == "all":
        from forensics.reports._repeat import capture_all_runtimes

        return capture_all_runtimes(model=model, output=output, source=source, image=image, input=input,
                                    resampling=resampling, tail_only=tail_only, delegate=delegate, replace=replace,
                                    images=images)
    from forensics.runs import usecases

    result = usecases.capture(model, output, source=source, image=image, input=input, resampling=resampling,
                              tail_only=tail_only, delegate=delegate, replace=replace, images=images,
                              progress=progress, runtime=runtime)
    if images is not None:
        return CaptureManyReport("capture", result, result.exit_code, warnings=result.warnings)
    return CaptureReport("capture", result, rows_key="buffers")


class IngestReport(Report):
    RESULT = "forensics.runs.ingest:IngestResult"

    ROWS_KEY = "buffers"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.runs import render_ingest

        return render_ingest(self.result)


@dataclass(frozen=True, repr=False)
class ArraysIngestReport(Report):
    path: str = ""  # the file the arrays came from

    RESULT = "forensics.runs.interop:ArraysIngest"

    @classmethod
    def from_dict(cls, doc: dict) -> "ArraysIngestReport":
        import dataclasses

        return dataclasses.replace(super().from_dict(doc), path=doc.get("path", ""))

    ROWS_KEY = "buffers"  # the document's list of rows (rows_key_of)

    def to_dict(self) -> dict:
        return {**super().to_dict(), "path": self.path}  # the file its text names, for a saved one to say again

    def renderables(self) -> list:
        from rich.text import Text

        from forensics.render.runs import render_buffers

        return [Text(f"{self.result.run.path}: added {', '.join(self.result.added)} from {self.path}"),
                render_buffers(self.result.run)]


@spellings()
def ingest(run, buffers, *, source: str | None = None, model=None, from_format: str | None = None,
           offset: int | None = None, length: int | None = None, gap_fill: int | None = None,
           replace: bool = False) -> IngestReport | ArraysIngestReport:
    """`forensics ingest RUN STAGE[:TENSOR]=FILE... --source NAME`: a driver's dumps into a run (`image=FILE`
    the picture the input was made from, `log[:NAME]=FILE` the driver's log); with `from_format` (npz /
    polygraphy) `buffers` is one file whose arrays are brought in. A buffer the run holds is replaced only with
    `replace`."""
    from forensics.core.options import Slice
    from forensics.runs import usecases

    result = usecases.ingest(run, buffers, source=source, model=model, from_format=from_format,
                             where=Slice(offset=offset, length=length, gap_fill=gap_fill), replace=replace)
    if from_format is not None:
        one = buffers if isinstance(buffers, (str, os.PathLike)) else buffers[0]
        return ArraysIngestReport("ingest", result, rows_key="buffers", path=os.fspath(one))
    warnings = tuple(f"{run}: replaced the run's {label}{'' if label.startswith('log:') else ' buffer'}"
                     for label in result.replaced)
    return IngestReport("ingest", result, warnings=warnings, rows_key="buffers")


class ExportReport(Report):
    RESULT = "forensics.runs.interop:ExportResult"

    ROWS_KEY = "arrays"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from rich.text import Text

        r = self.result
        return [Text(f"wrote {r.output} ({r.format}: {len(r.arrays)} arrays: {', '.join(n for n, _, _ in r.arrays)})")]


@spellings()
def export(run, *, format: str, output, allow_changed: bool = False) -> ExportReport:  # noqa: A002
    """`forensics export RUN --format npz|polygraphy -o FILE`: the run's buffers as typed arrays; a buffer
    changed since capture is refused unless `allow_changed` (then a warning names it)."""
    from forensics.runs.interop import export_run

    result = export_run(run, format, output, allow_changed=allow_changed)
    return ExportReport("export", result, rows_key="arrays", warnings=result.warnings)


@dataclass(frozen=True, repr=False)
class CompareReport(Report):
    html: str | None = None                # the --html page written
    impact: object = None                  # --impact: forensics.decode.impact.ImpactResult

    RESULT = "forensics.runs.compare:CompareResult"

    @classmethod
    def from_dict(cls, doc: dict) -> "CompareReport":
        """A saved compare (or batch) document: the result, the page it wrote, and --impact's result when the
        impact result reads back."""
        import dataclasses

        impact = None
        if doc.get("impact") is not None:
            from forensics.decode.impact import ImpactResult

            if not hasattr(ImpactResult, "from_dict"):
                raise TypeError("a compare --impact document cannot be read back: its impact result does not read "
                                "back from its document")
            impact = ImpactResult.from_dict(doc["impact"])
        return dataclasses.replace(super().from_dict(doc), html=doc.get("html"), impact=impact)

    ROWS_KEY = "stages"  # the document's list of rows (rows_key_of)

    def to_dict(self) -> dict:
        doc = self._sources(self.result.to_dict())
        if self.html:
            doc["html"] = self.html
        if self.impact is not None:
            doc["impact"] = self.impact.to_dict()
        return doc

    def tables(self) -> list:
        from forensics.render.runs import render_compare

        return list(render_compare(self.result, self.judgement))

    def renderables(self) -> list:
        out = self.tables()
        if self.impact is not None:
            from forensics.render.impact import render_impact

            out += render_impact(self.impact)
        if self.html:
            from rich.text import Text

            from forensics.render.style import wrote

            out.append(Text(wrote(self.html)))
        return out


class BatchReport(CompareReport):
    """compare --batch: the summary rows (html: the summary page written)."""

    RESULT = "forensics.runs.batch:BatchResult"

    ROWS_KEY = "rows"  # the document's list of rows (rows_key_of)

    def tables(self) -> list:
        from forensics.render.runs import render_batch

        return list(render_batch(self.result, self.judgement))


def _batch_html(html, batch, result, geometry, limit: int = 100) -> None:
    """The one-page batch summary, and beside it (OUT_pairs/) the reports of the first `limit` differing pairs."""
    from forensics.core.errors import ForensicsError
    from forensics.io.outputs import write_text_atomic
    from forensics.render.runs import batch_pictures, html_batch, html_report
    from forensics.runs.compare import compare_runs, find_runs
    from forensics.runs.remote import is_url, join

    html = os.fspath(html)
    reports = {}
    batch = os.fspath(batch).removeprefix("file://")
    folder = os.path.splitext(html)[0] + "_pairs"
    for row in [r for r in result.rows if r["verdict"] == Verdict.DIFFER][:limit]:
        try:  # the pair is read again where it is (a URL's runs in place, through its filesystem)
            runs = find_runs(join(batch, row["pair"]) if is_url(batch) else os.path.join(batch, row["pair"]))
            pair = compare_runs(runs[0], runs[1], geometry=geometry)
        except ForensicsError:
            continue
        os.makedirs(folder, exist_ok=True)
        name = f"{row['pair']}.html"
        write_text_atomic(os.path.join(folder, name), html_report(pair))
        reports[row["pair"]] = f"{os.path.basename(folder)}/{name}"
    write_text_atomic(html, html_batch(result, reports=reports, pictures=batch_pictures(result.aggregates, geometry)))


@spellings(tolerance=each("tolerance_item"))  # K and/or TENSOR=SPEC, repeated
def compare(*runs, html=None, previous=None, model=None, deps=None, limit: int = 8, batch=None, output=None,
            workers: int | None = None, tolerance=None, atol=None, rtol=None, check=None, labels=None,
            junit=None, progress=None, scheduler: str = "local", verify_files: bool = False,
            stall_timeout: float | None = None, impact: bool = False,
            tolerance_from=None) -> CompareReport | BatchReport:
    """`forensics compare RUN_A RUN_B` (stage by stage) or `compare --batch DIR -o SUMMARY.csv`. `tolerance`:
    K (LSB for every integer buffer) and/or (TENSOR, SPEC) pairs; with atol / rtol / check they judge
    differing buffers MATCH / WITHIN TOLERANCE / DIFFER (forensics.core.tolerance). `labels` names detection
    classes; `junit` writes a JUnit XML report (one test case per stage and tensor; per pair with `batch`). With
    `batch`: `scheduler` local / dask / tcp://HOST:PORT, `html` the one-page summary, `model`/`deps` the anchors, `verify_files`
    every buffer's CRC taken again instead of trusting the manifests (one pair is always verified),
    `stall_timeout` the seconds without a finished pair after which the batch ends (exit 2), its finished
    rows written to `output`. `impact`: which differing anchors change the detections (forensics impact), with
    `model`/`deps` or run A's model; it does not change the verdict. `tolerance_from`: reference runs whose
    measured spread is each tensor's tolerance (forensics.runs.noise; a tensor given its own `tolerance` keeps it)."""
    from forensics.runs import usecases

    policy = usecases.compare_policy(tolerance, atol=atol, rtol=rtol, check=check, tolerance_from=tolerance_from)
    if batch:
        usecases.check_batch(runs, previous=previous, output=output, model=model, deps=deps, impact=impact)
        result, geometry = usecases.batch(batch, output, workers=workers, scheduler=scheduler, model=model, deps=deps,
                                          policy=policy, progress=progress, verify_files=verify_files,
                                          stall_timeout=stall_timeout, writes=tuple(p for p in (html, junit) if p))
        if html:
            _batch_html(html, batch, result, geometry)
        if junit:
            from forensics.io.outputs import write_text_atomic
            from forensics.render.junit import junit_batch

            write_text_atomic(junit, junit_batch(result))
        return BatchReport("compare", result, rows_key="rows", judgement=result.judgement,
                           html=os.fspath(html) if html else None)
    usecases.check_pair(runs, output=output, model=model, deps=deps, scheduler=scheduler,
                        stall_timeout=stall_timeout)
    pair = usecases.compare(runs[0], runs[1], previous=previous, model=model, deps=deps, limit=limit, policy=policy,
                            labels=labels, impact=impact)
    result = pair.result
    if html:
        from forensics.io.outputs import write_text_atomic
        from forensics.render.runs import html_report, pictures_for

        write_text_atomic(html, html_report(result, pictures=pictures_for(result)))
    if junit:
        from forensics.io.outputs import write_text_atomic
        from forensics.render.junit import junit_xml

        write_text_atomic(junit, junit_xml(result))
    impacted = pair.impact
    return CompareReport("compare", result, judgement=result.judgement, impact=impacted,
                         warnings=tuple(result.warnings), rows_key="stages", html=os.fspath(html) if html else None)
