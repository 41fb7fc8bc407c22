"""csr: register traces and snapshots compared access by access."""

from __future__ import annotations

from dataclasses import dataclass

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
    from forensics.csr import usecases

    result, judgement = usecases.csr(a, b, reads=reads, mask=mask, snapshot=snapshot, name=name, find=find,
                                     line_pattern=line_pattern)
    if name is not None or find is not None:
        return RegisterReport("csr", result, rows_key="registers", judgement=judgement)
    return CsrReport("csr", result, judgement=judgement, rows_key="rows",
                     limit=None if limit == 0 else limit, show_all=all)
