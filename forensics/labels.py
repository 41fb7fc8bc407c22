"""Class-name files (`--labels FILE`): one name per line, or coral's `id  name` lines; id 0 is the first
non-background class."""

from __future__ import annotations

import os

from forensics.dump import check_readable_file
from forensics.errors import InputError, reading

MAX_BYTES = 16 << 20


def read_labels(path) -> tuple[str, ...]:
    """Class names by id. A line `17  dog` puts "dog" at id 17 (gaps stay empty names)."""
    path = os.fspath(path)
    if check_readable_file(path) > MAX_BYTES:
        raise InputError("too large for a label file", path)
    try:
        with reading(path, "a labels file"), open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path) from None
    labels: list[str] = []
    for line in lines:
        parts = line.strip().split(maxsplit=1)
        if len(parts) == 2 and parts[0].isdigit():
            index = int(parts[0])
            while len(labels) < index:
                labels.append("")
            labels.append(parts[1].strip())
        else:
            labels.append(line.strip())
    if not any(labels):
        raise InputError("no labels in the file", path)
    return tuple(labels)
