"""csr: register traces and snapshots compared access by access."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.reports.base import Report, spellings


@dataclass(frozen=True, repr=False)
class CsrReport(Report):
    limit: int | None = 200
    show_all: bool = False

    RESULT = "forensics.csr.compare:CsrComparison"

    ROWS_KEY = "rows"  # the document's list of rows (rows_key_of)

    @classmethod
    def from_dict(cls, doc: dict) -> "CsrReport":
        """The comparison a saved document stands for, with the table's limit and --all as saved."""
        import dataclasses

        report = super().from_dict(doc)
        table = doc.get("table") or {}
        return dataclasses.replace(report, limit=table.get("limit", cls.limit), show_all=bool(table.get("all")))

    def _lists_every_row(self) -> bool:
        """The table shows every row (else the first `limit` mismatches): render_comparison's choice."""
        return self.show_all or self.limit is None or self.result.row_count <= self.limit

    def _sources(self, doc: dict) -> dict:
        """The document with the table's limit and --all, and the matching rows when the table lists every
        row: the rows the table shows beyond the mismatches, so that a saved document renders again."""
        doc = super()._sources(doc)
        table = {"limit": self.limit, "all": self.show_all}
        if self._lists_every_row():
            table["matches"] = list(self.result.match_dicts())
        doc["table"] = table
        return doc

    def renderables(self) -> list:
        from forensics.render.csr import render_comparison

        return render_comparison(self.result, self.judgement, limit=self.limit, show_all=self.show_all)


class RegisterReport(Report):
    RESULT = "forensics.csr.registers:RegisterLookup"

    ROWS_KEY = "registers"  # the document's list of rows (rows_key_of)

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
