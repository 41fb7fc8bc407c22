"""csr as a library call: two register traces or snapshots compared access by access, or a register looked up
in the Beagle table; forensics.reports wraps the result in a report."""

from __future__ import annotations

from forensics.core.errors import InputError


def csr(a=None, b=None, *, reads: bool = False, mask=None, snapshot: bool = False, name=None, find=None,
        line_pattern: str | None = None) -> tuple:
    """`forensics csr A B` or `csr --name OFFSET` / `csr --find TEXT` whole: (the result, its judgement): the
    forensics.csr.registers.RegisterLookup with `name` / `find`, else the traces' comparison. `mask`: (offset or
    register name, bits that may differ) pairs, the bits of one register OR-ed together."""
    lookups = [q for q in (name, find) if q is not None]
    if lookups:
        if a is not None or b is not None:
            raise InputError("{name}/{find} take no trace files", params=True)
        if len(lookups) > 1:
            raise InputError("give {name} or {find}, not both", params=True)
        from forensics.csr.registers import judge_lookup, lookup_register

        result = lookup_register(find if find is not None else name, find=find is not None)
        return result, judge_lookup(result)
    if a is None or b is None:
        raise InputError("expected two traces A B, or {name:OFFSET}, or {find:TEXT}", params=True)
    from forensics.csr.compare import compare_files
    from forensics.csr.registers import beagle_table

    table = beagle_table()
    masks: dict[int, int] = {}
    for key, bits in mask or ():
        offset = table.resolve(key)
        masks[offset] = masks.get(offset, 0) | bits
    result = compare_files(a, b, include_reads=reads, masks=masks, snapshot=snapshot, table=table,
                           line_pattern=line_pattern)
    return result, result.judgement
