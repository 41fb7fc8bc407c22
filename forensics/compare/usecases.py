"""crc as a library call: files' sizes, CRC32s and head/mid/tail bytes, each against the first (and a logged
CRC32), judged; forensics.reports wraps the result in a report."""

from __future__ import annotations

import os

from forensics.core.options import Slice


def crc(files, *, chunk: int | None = None, expect: int | None = None, where: Slice = Slice(),
        progress=None) -> tuple:
    """`forensics crc FILE... [--chunk N] [--expect CRC]` whole: (forensics.compare.crc's result, its judgement:
    OK when one file and no `expect` leave nothing to compare, else MATCH / DIFFER)."""
    from forensics.compare.crc import crc_files, judge_crc

    result = crc_files([os.fspath(f) for f in files], chunk_size=chunk, expect=expect, progress=progress,
                       **where.dump_options())
    return result, judge_crc(result)
