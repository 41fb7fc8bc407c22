"""csr: register traces and snapshots compared access by access."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.reports.base import Report, spellings


@dataclass(frozen=True, repr=False)
class CsrReport(Report):
    limit: int | None = 200
    show_all: bool = False

    def renderables(self) -> list:
        from forensics.render.csr import render_comparison

        return render_comparison(self.result, self.judgement, limit=self.limit, show_all=self.show_all)


class RegisterReport(Report):
    RESULT = "forensics.csr.registers:RegisterLookup"

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        return "registers"

    def renderables(self) -> list:
        from forensics.render.csr import render_lookup

        return render_lookup(self.result, self.judgement)


@spellings()
def csr(a=None, b=None, *, reads: bool = False, mask=None, snapshot: bool = False, limit: int = 200,
        all: bool = False, name=None, find=None,  # noqa: A002
        line_pattern: str | None = None) -> CsrReport | RegisterReport:
    """`forensics csr A B` (two register traces or snapshots) or `csr --name OFFSET` / `csr --find TEXT`.

    `mask` is a list of (offset or register name, bits that may differ) pairs."""
    lookups = [q for q in (name, find) if q is not None]
    if lookups:
        if a is not None or b is not None:
            raise InputError("{name}/{find} take no trace files", params=True)
        if len(lookups) > 1:
            raise InputError("give {name} or {find}, not both", params=True)
        from forensics.csr.registers import judge_lookup, lookup_register

        result = lookup_register(find if find is not None else name, find=find is not None)
        return RegisterReport("csr", result, rows_key="registers", judgement=judge_lookup(result))
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
    return CsrReport("csr", result, judgement=result.judgement, rows_key="rows",
                     limit=None if limit == 0 else limit, show_all=all)
