"""The one CRC32 function (zlib's IEEE 802.3 value): Intel ISA-L's vectorised CRC through python-isal when it is
installed (3.5-4x zlib 1.2's speed), else zlib's. Every CRC forensics takes goes through it: forensics.compare.crc for
dumps, the dump reader for the .npz members it inflates."""

from __future__ import annotations

import zlib


def _load_crc32():
    """The fastest available implementation of zlib's CRC32: ISA-L's through python-isal, else zlib's."""
    try:
        from isal.isal_zlib import crc32 as fast
    except ImportError:
        return zlib.crc32
    return fast


crc32 = _load_crc32()
CRC32_BACKEND = "zlib" if crc32 is zlib.crc32 else "isal"
