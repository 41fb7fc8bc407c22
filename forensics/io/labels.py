"""Class-name files (`--labels FILE`): one name per line, or coral's `id  name` lines; id 0 is the first
non-background class."""

from __future__ import annotations

import os

from forensics.io.dump import read_small_file
from forensics.core.errors import InputError

MAX_BYTES = 16 << 20
MAX_LABEL_ID = 1_000_000  # class ids a label file may name (COCO has 91, Open Images 601); gaps are filled
_ID_DIGITS = len(str(MAX_LABEL_ID))


def read_labels(path) -> tuple[str, ...]:
    """Class names by id. A line `17  dog` puts "dog" at id 17 (gaps stay empty names)."""
    path = os.fspath(path)
    data = read_small_file(path, MAX_BYTES, "a label file")  # the one way a small file is opened and sized
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path) from None
    labels: list[str] = []
    for lineno, line in enumerate(lines, start=1):
        parts = line.strip().split(maxsplit=1)
        # an id is ASCII digits (str.isdigit() also takes '²', which int() refuses); its size is checked before
        # the gap up to it is filled (an id of 10^11 took 600 MiB and never ended)
        if len(parts) == 2 and parts[0].isascii() and parts[0].isdigit():
            if len(parts[0]) > _ID_DIGITS or int(parts[0]) > MAX_LABEL_ID:
                raise InputError(f"line {lineno}: class id {parts[0][:20]}{'...' if len(parts[0]) > 20 else ''} is "
                                 f"larger than the {MAX_LABEL_ID:,} a label file may name (MAX_LABEL_ID)", path)
            index = int(parts[0])
            while len(labels) < index:
                labels.append("")
            labels.append(parts[1].strip())
        else:
            labels.append(line.strip())
    if not any(labels):
        raise InputError("no labels in the file", path)
    return tuple(labels)
