"""import, fingerprint, verify: what a driver logs of its buffers, checked."""

from __future__ import annotations

import os
from forensics.reports.base import Report, spellings


class ImportReport(Report):
    def renderables(self) -> list:
        from forensics.render.evidence import render_import

        return render_import(self.result)


@spellings()
def import_(text, *, output, format: str = "auto", gap_fill: int | None = None,  # noqa: A002
            tag: str | None = None) -> ImportReport:
    """`forensics import TEXT -o OUT.bin`: a text hex dump (WinDbg d*, xxd, hexdump -C, od, plain hex, a driver's
    own hex rows) to bytes; `tag` picks the buffer among a driver's rows (`output`, `bitstream`, `DPC-OUT`...)."""
    from forensics.io.textdump import import_text_dump

    return ImportReport("import", import_text_dump(os.fspath(text), os.fspath(output), fmt=format,
                                                   gap_fill=gap_fill, tag=tag))


class FingerprintReport(Report):
    RESULT = "forensics.buffer.fingerprint:Fingerprint"

    ROWS_KEY = "pages"  # the document's list of rows (rows_key_of)

    @classmethod
    def from_dict(cls, doc: dict) -> "FingerprintReport":
        """The report's own keys are not the source's, which the fingerprint's document spreads in."""
        result = cls.result_type().from_dict({k: v for k, v in doc.items() if k not in ("command", "report")})
        return cls(doc.get("command", ""), result, rows_key=cls.rows_key_of(doc))

    def lines(self) -> list[str]:
        """The driver-style lines, exactly (a driver's log is compared with them character by character)."""
        from forensics.render.evidence import render_fingerprint

        return render_fingerprint(self.result)

    def renderables(self) -> list:
        from rich.text import Text

        return [Text(line, no_wrap=True, overflow="ignore") for line in self.lines()]


@spellings()
def fingerprint(file, *, page: int = 4096, tag: str | None = None, offset: int | None = None,
                length: int | None = None, gap_fill: int | None = None, progress=None) -> FingerprintReport:
    """`forensics fingerprint FILE`: what a driver can log for a buffer (pages' first8/last8, xor-fold, size,
    CRC32, HEAD/MID/TAIL, the [FP] line)."""
    from forensics.buffer import usecases
    from forensics.core.options import Slice

    result = usecases.fingerprint(file, page=page, tag=tag, where=Slice(offset=offset, length=length,
                                                                          gap_fill=gap_fill), progress=progress)
    return FingerprintReport("fingerprint", result, rows_key="pages")


class VerifyReport(Report):
    RESULT = "forensics.buffer.fingerprint:VerifyReport"

    ROWS_KEY = "checks"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.evidence import render_verify

        return render_verify(self.result, self.judgement)


@spellings()
def verify(log, *files, buffer=None, pattern: str | None = None, page: int = 4096, offset: int | None = None,
           length: int | None = None, gap_fill: int | None = None) -> VerifyReport:
    """`forensics verify LOG FILE...`: every fingerprint a driver logged, checked against the files; exit code
    1 when one differs. `buffer` is a list of (tag, file) pairs."""
    from forensics.buffer import usecases
    from forensics.core.options import Slice

    result = usecases.verify(log, files, buffer=buffer, pattern=pattern, page=page,
                             where=Slice(offset=offset, length=length, gap_fill=gap_fill))
    return VerifyReport("verify", result, rows_key="checks", judgement=result.judgement)
