"""The buffer commands as library calls: fingerprint, verify and coverage open their dumps and judge;
forensics.reports wraps each result in a report."""

from __future__ import annotations

import os

from forensics.core.options import Slice


def fingerprint(file, *, page: int = 4096, tag: str | None = None, where: Slice = Slice(), progress=None):
    """`forensics fingerprint FILE` whole: the dump (`where`: its slice; empty allowed, no sidecar: the bytes as
    a driver holds them) and what a driver can log of it (forensics.buffer.fingerprint)."""
    from forensics.buffer.fingerprint import fingerprint_dump
    from forensics.io.dump import open_dump

    dump = open_dump(file, allow_empty=True, use_sidecar=False, **where.dump_options())
    return fingerprint_dump(dump, page_size=page, tag=tag, progress=progress)


def verify(log, files, *, buffer=None, pattern: str | None = None, page: int = 4096, where: Slice = Slice()):
    """`forensics verify LOG FILE...` whole: every fingerprint the driver's log holds checked against the files
    (`buffer`: (tag, file) pairs); the result carries its judgement."""
    from forensics.buffer.fingerprint import verify_log

    return verify_log(os.fspath(log), [os.fspath(f) for f in files], buffers=dict(buffer or ()), page_size=page,
                      pattern=pattern, **where.dump_options())


def coverage(file, *, sentinel: bytes, min_run: int = 8, offset: int | None = None, length: int | None = None,
             gap_fill: int | None = None) -> tuple:
    """`forensics coverage FILE --sentinel HEX` whole: (the untouched ranges of the region `offset`/`length`,
    forensics.buffer.coverage, its judgement, the dump read)."""
    from forensics.buffer.coverage import analyse_coverage, judge_coverage
    from forensics.io.dump import open_dump

    dump = open_dump(file, **Slice(gap_fill=gap_fill).dump_options())  # offset/length: the region looked at
    result = analyse_coverage(dump, sentinel, min_run=min_run, offset=offset or 0, length=length)
    return result, judge_coverage(result), dump
