"""diagnose, simulate: the bug that turns A into B, named; a bug applied to A."""

from __future__ import annotations

from forensics.reports.base import Report, spellings
from forensics.core.options import each


class DiagnoseReport(Report):
    RESULT = "forensics.diagnose.result:DiagnoseResult"

    ROWS_KEY = "findings"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.diagnose import render_diagnose

        return render_diagnose(self.result, self.judgement)


@spellings(sentinel=each("hex_bytes"))  # repeated: one or more patterns (coverage takes one)
def diagnose(a, b, *, previous=None, model=None, tensor=None, deps=None, record=None, offset=None, fields=None, pad=None,
             scale=None, zero_point=None, sentinel=None, min_run: int = 16, window: int = 256,
             max_shift: int | None = None, length: int | None = None, gap_fill: int | None = None,
             progress=None, tolerance: int | None = None, atol=None, inputs=None) -> DiagnoseReport:
    """`forensics diagnose A B`: the verdict (IDENTICAL / WITHIN TOLERANCE exit 0; EXPLAINED / PARTLY
    EXPLAINED / UNEXPLAINED exit 1) and the named bugs behind a differing pair. `inputs`: the two inputs A and B
    were computed from (paths), compared by CRC when B is unexplained. `model` (with or without `tensor`) or
    `deps` say the layout and quantization (the output's zero point: not_computed)."""
    from forensics.core.options import Layout, Slice
    from forensics.diagnose import usecases

    where = Slice(offset=offset, length=length, gap_fill=gap_fill)
    dump_a, dump_b = usecases.open_pair(a, b, where)
    from forensics.reports._link import diagnose_link

    linked = diagnose_link(model, tensor, dump_a, dump_b)  # a pair of instruction bitstreams: the link check
    if linked is not None:
        return linked
    layout = Layout(record=record, offset=offset, fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    case = usecases.diagnose(dump_a, dump_b, where=where, previous=previous, model=model, tensor=tensor, deps=deps,
                             layout=layout, sentinels=sentinel or [], tolerance=tolerance, atol=atol,
                             min_run=min_run,
                             window=window, max_shift=max_shift, inputs=inputs, progress=progress)
    return DiagnoseReport("diagnose", case.result, rows_key="findings", dumps=case.dumps, judgement=case.judgement)


class SimulateReport(Report):
    RESULT = "forensics.diagnose.simulate:SimulateResult"

    @classmethod
    def from_dict(cls, doc: dict) -> "SimulateReport":
        """The simulation a saved document stands for, or the list of bugs (`--bug list`: its rows as saved)."""
        if "bugs" in doc:
            return cls(doc.get("command", "simulate"), {"bugs": list(doc["bugs"])}, rows_key="bugs")
        return super().from_dict(doc)

    def to_dict(self) -> dict:
        # with the command and report it is (Report._sources): a saved document names the report it loads back as
        return self._sources(dict(self.result) if isinstance(self.result, dict) else self.result.to_dict())

    def renderables(self) -> list:
        from forensics.render.diagnose import render_bug_list, render_simulated

        if isinstance(self.result, dict):
            return [render_bug_list([(b["kind"], b["usage"], b["description"]) for b in self.result["bugs"]])]
        return render_simulated(self.result)


@spellings()
def simulate(a=None, *, bug: str, output=None, previous=None, model=None) -> SimulateReport:
    """`forensics simulate A --bug KIND[:PARAMS] -o B`: what A becomes under the bug, written atomically;
    `bug="list"` lists the kinds."""
    from forensics.link import usecases

    result = usecases.simulate(a, bug=bug, output=output, previous=previous, model=model)
    if bug == "list":
        return SimulateReport("simulate", {"bugs": [{"kind": k, "usage": u, "description": d} for k, u, d in result]},
                              rows_key="bugs")
    return SimulateReport("simulate", result)
