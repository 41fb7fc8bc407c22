"""diagnose, simulate: the bug that turns A into B, named; a bug applied to A."""

from __future__ import annotations

import os

from forensics.core.errors import InputError
from forensics.reports.base import Report, _slice, spellings
from forensics.core.options import checked, each, hex_bytes


class DiagnoseReport(Report):
    def renderables(self) -> list:
        from forensics.render.diagnose import render_diagnose

        return render_diagnose(self.result, self.judgement)


def _diagnose_context(dump_a, dump_b, *, model, tensor, deps=None, **layout):
    """The layout from model/tensor (fitted to A's size, else B's: one side may be raw, the other the tensor),
    or from the detection tensor --model alone or --deps says a side holds (its quantization: where the output's
    zero point is), else the sidecars; the layout options override either."""
    from forensics.core.options import ModelContext
    from forensics.decode.modeldumps import dump_context

    if tensor is None and model is None and deps is None:
        return dump_context(dump_a if dump_a.meta is not None else dump_b, **layout)
    tried, first = [], None
    for dump in (dump_a, dump_b):
        try:
            context = dump_context(dump, ModelContext(model=model, tensor=tensor, deps=deps), **layout)
        except InputError as exc:
            first = first or exc
            continue
        if tensor is not None or context.fit is not None:  # this side is the model's tensor
            return context
        tried.append(context)
    if tried:  # neither side is one of the detection tensors: the sidecars' layout
        return tried[0]
    if model is not None and tensor is None:
        raise InputError("{model} needs {tensor} (the output tensor the dumps hold)", params=True) from None
    raise first


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
def diagnose(a, b, *, previous=None, model=None, tensor=None, deps=None, record=None, offset=None, fields=None, pad=None,
             scale=None, zero_point=None, sentinel=None, min_run: int = 16, window: int = 256,
             max_shift: int | None = None, length: int | None = None, gap_fill: int | None = None,
             progress=None, tolerance: int | None = None, atol=None, inputs=None) -> DiagnoseReport:
    """`forensics diagnose A B`: the verdict (IDENTICAL / WITHIN TOLERANCE exit 0; EXPLAINED / PARTLY
    EXPLAINED / UNEXPLAINED exit 1) and the named bugs behind a differing pair. `inputs`: the two inputs A and B
    were computed from (paths), compared by CRC when B is unexplained. `model` (with or without `tensor`) or
    `deps` say the layout and quantization (the output's zero point: not_computed)."""
    from forensics.diagnose import diagnose_dumps
    from forensics.diagnose.result import judge_diagnose
    from forensics.io.dump import open_dump

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    if model is not None and tensor is None:  # link: a pair of instruction bitstreams gets the link check
        from forensics.reports._link import diagnose_link

        linked = diagnose_link(model, dump_a, dump_b)
        if linked is not None:
            return linked
    earlier = open_dump(previous, **options) if previous else None
    context = _diagnose_context(dump_a, dump_b, model=model, tensor=tensor, deps=deps, record_size=record, offset=offset,
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
                          judgement=judge_diagnose(result))


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
