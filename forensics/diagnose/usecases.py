"""diagnose as a library call: a differing pair's layout fitted from the model, its sidecars or the flags, the
bug that turns A into B named and judged; forensics.reports wraps the result in a report (and tries the link
check first when --model names instruction bitstreams: forensics.link.usecases.diagnose_pair)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.core.judgement import Judgement
from forensics.core.options import Layout, ModelContext, Slice


def open_pair(a, b, where: Slice = Slice()):
    """(A, B) opened with the slice (offset alone is the layout's, not the slice's)."""
    from forensics.io.dump import open_dump

    options, _ = where.split()
    return open_dump(a, **options), open_dump(b, **options)


def _context(dump_a, dump_b, model, tensor, deps, layout: dict):
    """The layout from model/tensor (fitted to A's size, else B's: one side may be raw, the other the tensor),
    or from the detection tensor --model alone or --deps says a side holds (its quantization: where the output's
    zero point is), else the sidecars; the layout options override either. The ModelContext group is built per
    side: a side it does not fit is the next side's to try, and its rules' errors are said when neither fits."""
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


def tolerance_lsb(tolerance: int | None, atol) -> int | None:
    """diagnose's tolerance: `tolerance` K or `atol` 'Klsb' (whole LSB of the elements' codes: the bug kinds
    compare codes, not dequantized values); None without either."""
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


@dataclass(frozen=True)
class DiagnoseCase:
    """What diagnose found, whole: the result (forensics.diagnose.result.DiagnoseResult), its judgement and the
    dumps read (A, B, the earlier one)."""

    result: object
    judgement: Judgement
    dumps: tuple


def diagnose(dump_a, dump_b, *, where: Slice = Slice(), previous=None, model=None, tensor=None, deps=None,
             layout: Layout = Layout(), sentinels=(), tolerance: int | None = None, atol=None, min_run: int = 16,
             window: int = 256, max_shift: int | None = None, inputs=None, progress=None) -> DiagnoseCase:
    """`forensics diagnose A B` whole, on the pair open_pair opened: the earlier dump `previous` opened, the layout
    fitted, `inputs` (the two inputs A and B were computed from, paths) opened, the bug named and judged.
    `sentinels`: the fill patterns (bytes) to look for; `tolerance` K or `atol` 'Klsb': whole LSB of the elements'
    codes (tolerance_lsb)."""
    from forensics.diagnose.engine import diagnose_dumps
    from forensics.diagnose.result import judge_diagnose
    from forensics.io.dump import open_dump

    tolerance = tolerance_lsb(tolerance, atol)
    options, offset = where.split()
    earlier = open_dump(previous, **options) if previous else None
    flags = {**layout.context_keywords(), "offset": offset}
    flags.pop("count")  # diagnose has no --count: the layout's record count is the dump's
    context = _context(dump_a, dump_b, model, tensor, deps, flags)
    named = [(f"0x{p.hex().upper()}", p) for p in sentinels]
    if inputs is not None and (isinstance(inputs, (str, bytes, os.PathLike)) or len(inputs) != 2):
        raise InputError("{inputs} takes two paths: the input A was computed from, then B's", params=True)
    given = tuple(open_dump(p) for p in inputs) if inputs is not None else None
    result = diagnose_dumps(dump_a, dump_b, layout=context.layout, previous=earlier, model_view=context.view,
                            model=os.fspath(model) if model is not None else None, sentinels=named,
                            tolerance=tolerance, min_run=min_run, max_shift=max_shift, window=window,
                            progress=progress, inputs=given)
    return DiagnoseCase(result, judge_diagnose(result), (dump_a, dump_b, earlier))
