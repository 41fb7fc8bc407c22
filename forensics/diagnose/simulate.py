"""simulate: what a reference buffer A becomes under a named driver bug (`KIND[:PARAMS]`), written as B.

The generators and their spellings live with their kinds (forensics/diagnose/kinds/, one module per kind, the
same ones `diagnose` scores); this module applies one to a dump. Its names stay importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.diagnose.kinds import bug_help, parse_bug, register  # noqa: F401 (register: the kinds hook)
from forensics.core.errors import InputError
from forensics.diagnose.kinds.base import FILL_BYTE, ArraySource, Bug, Kind, compress_lanes, gather  # noqa: F401
from forensics.diagnose.kinds.bits import Bits  # noqa: F401
from forensics.diagnose.kinds.cacheline import CacheLines  # noqa: F401
from forensics.diagnose.kinds.fill import Fill  # noqa: F401
from forensics.diagnose.kinds.lane_swap import WORD_NAMES, LaneSwap  # noqa: F401
from forensics.diagnose.kinds.oversize import Oversize  # noqa: F401
from forensics.diagnose.kinds.page import Pages  # noqa: F401
from forensics.diagnose.kinds.relayout import Relayout  # noqa: F401
from forensics.diagnose.kinds.shift import Shift  # noqa: F401
from forensics.diagnose.kinds.signedness import Signedness  # noqa: F401
from forensics.diagnose.kinds.stale import Stale  # noqa: F401
from forensics.diagnose.kinds.stride import Strided  # noqa: F401
from forensics.diagnose.kinds.truncation import Truncation  # noqa: F401
from forensics.diagnose.kinds.value_map import ValueMap  # noqa: F401


def __getattr__(name):
    if name == "BUG_HELP":  # (kind, usage, description) of every kind, including ones registered later
        return bug_help()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class SimulateResult(serial.Serial):
    source: str
    bug: str
    kind: str
    params: dict
    size_a: int
    size_b: int
    data: bytes = field(default=b"", repr=False, compare=False, metadata=serial.json(skip=True))  # B, written to output
    output: str | None = None
    exit_code: int = field(default=0, metadata=serial.json(skip=True))


MAX_SIMULATED = 256 << 20  # bytes of a simulated B: it is built in memory with an index per byte (~10x its size)


def apply_bug(bug: Bug, data, fill: int = FILL_BYTE) -> bytes:
    """B as the bug makes it from A's bytes (undefined bytes get `fill`)."""
    src = ArraySource(data)
    n_out = bug.size_out(src.size)
    if n_out > MAX_SIMULATED:  # checked before allocating (oversize:1099511627776 asked for 8 TiB of indices)
        raise InputError(f"bug {bug.spec()} makes B {n_out:,} bytes, more than the {MAX_SIMULATED >> 20} MiB "
                         f"a simulated dump may be (MAX_SIMULATED)")
    pred, defined, _ = bug.predict(src, 0, n_out)
    pred[~defined] = fill
    return pred.tobytes()


def simulate(a, bug, *, previous=None, output=None) -> SimulateResult:
    """What A (a path, Dump or bytes) becomes under `bug` (a Bug or a `KIND[:PARAMS]` string); with `output`,
    B is written there atomically."""
    from forensics.io.dump import Dump, open_dump

    path = "<bytes>"
    if isinstance(a, (bytes, bytearray, memoryview, np.ndarray)):
        data = bytes(a)
    else:
        dump = a if isinstance(a, Dump) else open_dump(a)
        path, data = dump.path, dump.read(0, dump.size)
    prev = None
    if previous is not None:
        pdump = previous if isinstance(previous, Dump) else open_dump(previous)
        prev = ArraySource(pdump.read(0, pdump.size))
    spec = bug if isinstance(bug, str) else bug.spec()
    bug = parse_bug(bug, len(data), prev) if isinstance(bug, str) else bug
    out = apply_bug(bug, data)
    if output is not None:
        from forensics.io.outputs import write_bytes_atomic

        write_bytes_atomic(output, out)
    return SimulateResult(path, spec, bug.kind, bug.params(), len(data), len(out), out,
                          None if output is None else str(output))


SENTINEL_PATTERNS = (b"\xcc", b"\xaa", b"\x00", b"\xff", b"\xcd", bytes.fromhex("efbeadde"),
                     bytes.fromhex("deadbeef"), bytes.fromhex("0df0adba"), bytes.fromhex("baadf00d"))
