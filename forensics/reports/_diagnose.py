"""diagnose, simulate: the bug that turns A into B, named; a bug applied to A."""

from __future__ import annotations

import os

from forensics.core.errors import InputError
from forensics.reports.base import Report, _slice, spellings
from forensics.core.options import checked, each, hex_bytes


class DiagnoseReport(Report):
    def renderables(self) -> list:
        from forensics.render.diagnose import render_diagnose

        return render_diagnose(self.result)


def _diagnose_context(dump_a, dump_b, *, model, tensor, **layout):
    """The layout from model/tensor (fitted to A's size, else B's: one side may be raw, the other the
    tensor), else the sidecars; the layout options override either."""
    from forensics.decode.modeldumps import dump_context

    if model is not None and tensor is None:
        raise InputError("{model} needs {tensor} (the output tensor the dumps hold)", params=True)
    if tensor is None:
        return dump_context(dump_a if dump_a.meta is not None else dump_b, **layout)
    try:
        return dump_context(dump_a, model=model, tensor=tensor, **layout)
    except InputError as first:
        try:
            return dump_context(dump_b, model=model, tensor=tensor, **layout)
        except InputError:
            raise first from None


def _lsb(tolerance, atol):
    """`tolerance` K or `atol` 'Klsb' (whole LSB of the elements' codes); None without either."""
    if atol is None:
        return tolerance
    text = str(atol).strip().lower()
    number = text[:-3] if text.endswith("lsb") else text
    if not number.isdigit():
        raise InputError(f"{atol!r}: diagnose takes whole LSB of the quantized elements (e.g. 1lsb)", param="atol",
                         value=atol)
    if tolerance is not None and tolerance != int(number):
        raise InputError("give {tolerance} or {atol}, not both", params=True)
    return int(number)


@spellings("sentinel")
def diagnose(a, b, *, previous=None, model=None, tensor=None, record=None, offset=None, fields=None, pad=None,
             scale=None, zero_point=None, sentinel=None, min_run: int = 16, window: int = 256,
             max_shift: int | None = None, length: int | None = None, gap_fill: int | None = None,
             progress=None, tolerance: int | None = None, atol=None, inputs=None) -> DiagnoseReport:
    """`forensics diagnose A B`: the verdict (IDENTICAL / WITHIN TOLERANCE exit 0; EXPLAINED / PARTLY
    EXPLAINED / UNEXPLAINED exit 1) and the named bugs behind a differing pair. `inputs`: the two inputs A and B
    were computed from (paths), compared by CRC when B is unexplained."""
    from forensics.diagnose import diagnose_dumps
    from forensics.io.dump import open_dump

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    if model is not None and tensor is None:  # link: a pair of instruction bitstreams gets the link check
        from forensics.reports._link import diagnose_link

        linked = diagnose_link(model, dump_a, dump_b)
        if linked is not None:
            return linked
    earlier = open_dump(previous, **options) if previous else None
    context = _diagnose_context(dump_a, dump_b, model=model, tensor=tensor, record_size=record, offset=offset,
                                fields=fields, pad_lanes=pad, scale=scale, zero_point=zero_point)
    patterns = checked("sentinel", each(hex_bytes), sentinel) or []
    sentinels = [(f"0x{p.hex().upper()}", p) for p in patterns]
    if inputs is not None and (isinstance(inputs, (str, bytes, os.PathLike)) or len(inputs) != 2):
        raise InputError("{inputs} takes two paths: the input A was computed from, then B's", params=True)
    given = tuple(open_dump(p) for p in inputs) if inputs is not None else None
    result = diagnose_dumps(dump_a, dump_b, layout=context.layout, previous=earlier, model_view=context.view,
                            model=os.fspath(model) if model is not None else None, sentinels=sentinels,
                            tolerance=_lsb(tolerance, atol), min_run=min_run, max_shift=max_shift, window=window,
                            progress=progress, inputs=given)
    return DiagnoseReport("diagnose", result, rows_key="findings", dumps=(dump_a, dump_b, earlier),
                          verdict=result.verdict)


class SimulateReport(Report):
    def to_dict(self) -> dict:
        return self.result if isinstance(self.result, dict) else self.result.to_dict()

    def renderables(self) -> list:
        from forensics.render.diagnose import render_bug_list, render_simulated

        if isinstance(self.result, dict):
            return [render_bug_list([(b["kind"], b["usage"], b["description"]) for b in self.result["bugs"]])]
        return render_simulated(self.result)


@spellings()
def simulate(a=None, *, bug: str, output=None, previous=None, model=None) -> SimulateReport:
    """`forensics simulate A --bug KIND[:PARAMS] -o B`: what A becomes under the bug, written atomically;
    `bug="list"` lists the kinds."""
    from forensics.diagnose.simulate import BUG_HELP
    from forensics.diagnose.simulate import simulate as run

    from forensics.link.bugs import BUG_HELP as LINK_BUGS, is_link_bug, simulate_link  # link: issue 23

    if bug == "list":
        return SimulateReport("simulate", {"bugs": [{"kind": k, "usage": u, "description": d}
                                                    for k, u, d in BUG_HELP + LINK_BUGS]}, rows_key="bugs")
    if a is None or output is None:
        raise InputError("simulate needs A and {output} B (or bug 'list')", params=True)
    if is_link_bug(bug) or model is not None:  # link: a bug on an instruction bitstream needs its model
        return SimulateReport("simulate", simulate_link(a, bug, model=model, output=output))
    return SimulateReport("simulate", run(a, bug, previous=previous, output=output))
