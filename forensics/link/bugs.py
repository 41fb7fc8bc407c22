"""Link bugs on an instruction bitstream (simulate), and the link check as runs' `instructions` stages get it.

The generators start from a bitstream linked as libedgetpu links it (`forensics link`) and make what a driver
with the bug hands the chip: `byte_aligned[:NAME]` (each input / output field written as 4 whole bytes at
offset_bit / 8, a `memcpy(bitstream + offset_bit / 8, &value32, 4)`), `aliased[:NAME,NAME...]` (the outputs,
or the named layers, linked to the first one's address), `unlinked:NAME` (NAME's fields left as compiled),
`halves_swapped:NAME` (NAME's 32-bit halves exchanged). A run may carry `instructions:E_K` buffers (bitstream K
of executable E as the driver linked it) and `params` buffers; compare and diagnose answer those with the
link check (forensics.link.bitstream.check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from forensics.core.errors import InputError
from forensics.link.bitstream import DESC_KINDS, FOREIGN, U32, check, fields_of, read_u32, write_u32
from forensics.core.verdict import Verdict

BUGS = ("byte_aligned", "aliased", "unlinked", "halves_swapped")
BUG_HELP = (
    ("byte_aligned", "byte_aligned[:NAME]", "each input/output field (or NAME's) written as 4 whole bytes at "
                                            "offset_bit / 8 (memcpy), not 32 bits from offset_bit"),
    ("aliased", "aliased[:NAME,NAME...]", "the outputs (or the named layers) all linked to the first one's address"),
    ("unlinked", "unlinked:NAME", "NAME's fields left as compiled (never linked)"),
    ("halves_swapped", "halves_swapped:NAME", "NAME's address with its 32-bit halves exchanged"),
)
INSTRUCTIONS = "instructions"  # the run stage holding a linked bitstream: tensor "E_K"
_TENSOR = re.compile(r"^(\d{1,6})_(\d{1,6})$")


def is_link_bug(spec: str) -> bool:
    return isinstance(spec, str) and spec.split(":", 1)[0] in BUGS


def _memcpy_u32(buf: bytearray, offset_bit: int, value: int) -> None:
    """The seed driver's write: 4 little-endian bytes at byte offset_bit / 8, whatever offset_bit % 8 is."""
    b = offset_bit // 8
    if b + 4 > len(buf):
        raise InputError(f"field at bit {offset_bit} runs past the end of the {len(buf)}-byte bitstream")
    buf[b:b + 4] = (value & U32).to_bytes(4, "little")


def _names(exe, k: int, kind_filter=("input", "output")) -> list:
    out = []
    for f in fields_of(exe, k):
        if DESC_KINDS[f.desc] in kind_filter and f.name not in out:
            out.append(f.name)
    return out


def apply_link_bug(exe, k: int, linked: bytes, spec: str) -> bytes:
    """What the driver with bug `spec` hands the chip, from bitstream `k` of `exe` linked correctly (`linked`)."""
    kind, _, arg = spec.partition(":")
    if kind not in BUGS:
        raise InputError(f"not a link bug: {spec!r} (one of {', '.join(BUGS)})")
    model = exe.bitstreams[k]
    if len(linked) != len(model):
        raise InputError(f"the linked bitstream has {len(linked):,} bytes, executable {exe.index} bitstream {k} "
                         f"has {len(model):,}")
    fields = fields_of(exe, k)
    known = _names(exe, k)
    names = _bug_layers(kind, arg, known)
    buf = bytearray(linked)
    io_fields = [f for f in fields if DESC_KINDS[f.desc] in ("input", "output")]
    if kind == "byte_aligned":
        for f in io_fields:
            if names and f.name not in names:
                continue
            value = _linked_address(fields, linked, f.name, f.batch)
            write_u32(buf, f.offset_bit, read_u32(model, f.offset_bit))  # the seed copies the compiled bitstream
            _put(buf, f, value, _memcpy_u32)
    elif kind == "aliased":
        _alias(buf, fields, io_fields, linked, names, known)
    elif kind == "unlinked":
        for f in io_fields:
            if f.name == names[0]:
                write_u32(buf, f.offset_bit, read_u32(model, f.offset_bit))
    else:  # halves_swapped
        for f in io_fields:
            if f.name == names[0]:
                value = _linked_address(fields, linked, f.name, f.batch)
                _put(buf, f, ((value & U32) << 32) | (value >> 32))
    return bytes(buf)


def _bug_layers(kind: str, arg: str, known: list) -> list:
    """The layer names a link bug's spec gives (after its `:`, comma-separated), each one the bitstream links;
    unlinked and halves_swapped need exactly one."""
    names = [n for n in arg.split(",") if n] if arg else []
    for n in names:
        if n not in known:
            raise InputError(f"{kind}: {n!r} is not a layer the bitstream links (it links: {', '.join(known)})")
    if kind in ("unlinked", "halves_swapped") and len(names) != 1:
        raise InputError(f"{kind} needs one layer name: {kind}:NAME")
    return names


def _linked_address(fields, linked: bytes, name: str, batch: int) -> int:
    """The address the correctly linked bitstream gives layer `name`'s `batch`: its halves' fields put together."""
    value = 0
    for f in fields:
        if f.name == name and f.batch == batch and DESC_KINDS[f.desc] in ("input", "output"):
            half = read_u32(linked, f.offset_bit)
            value |= half << (0 if f.position == "LOWER_32BIT" else 32)
    return value


def _put(buf: bytearray, f, value: int, writer=write_u32) -> None:
    """Field `f`'s half of the 64-bit `value`, written by `writer` (the chip's 32 bits, or a memcpy)."""
    half = value & U32 if f.position == "LOWER_32BIT" else (value >> 32) & U32
    writer(buf, f.offset_bit, half)


def _alias(buf: bytearray, fields, io_fields, linked: bytes, names: list, known: list) -> None:
    """aliased: every layer of the group (the named ones, else the outputs) after the first linked to the
    first one's address (batch 0)."""
    group = names or [n for n in known if any(f.name == n and DESC_KINDS[f.desc] == "output" for f in fields)]
    if len(group) < 2:
        raise InputError("aliased needs two layers: aliased:NAME,NAME (this bitstream has "
                         f"{len(group)} output)")
    target = _linked_address(fields, linked, group[0], 0)
    for f in io_fields:
        if f.name in group[1:]:
            _put(buf, f, target)


@dataclass(frozen=True)
class LinkSimulation:
    """`simulate LINKED --bug KIND --model MODEL -o B`: the bitstream a driver with the link bug hands the chip."""

    source: str
    bug: str
    executable: dict
    bitstream: int
    data: bytes = field(repr=False, compare=False)
    output: str | None = None
    exit_code: int = 0

    @property
    def size_b(self) -> int:
        return len(self.data)

    @property
    def kind(self) -> str:
        return self.bug.split(":", 1)[0]

    # kept: the document holds the bitstream's size, not its bytes, so it cannot be read back into one
    def to_dict(self) -> dict:
        return {"source": self.source, "bug": self.bug, "kind": self.kind, "params": {"executable": self.executable,
                                                                                       "bitstream": self.bitstream},
                "size_a": len(self.data), "size_b": len(self.data), "output": self.output}


def simulate_link(a, bug: str, *, model, output=None) -> LinkSimulation:
    """Apply a link bug to A, a correctly linked bitstream of `model` (path or bytes)."""
    import os

    from forensics.io.dump import DumpReader, open_dump
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    if model is None:
        raise InputError("a link bug needs the model whose bitstream A is: give {model:MODEL}", params=True)
    packages = read_packages(open_model(model))
    if isinstance(a, (bytes, bytearray, memoryview)):
        path, data = "<bytes>", bytes(a)
    else:
        dump = open_dump(a)
        buf = bytearray(dump.size)
        with DumpReader(dump) as reader:
            reader.read_exact(0, memoryview(buf))
        path, data = dump.path, bytes(buf)
    result = check(packages, data)
    if result.verdict == FOREIGN or result.bitstream is None:
        raise InputError("is not an instruction bitstream of the model (check it with link --check)", path)
    _, exe = _executable(packages, result.executable)
    out = apply_link_bug(exe, result.bitstream, data, bug)
    if output is not None:
        from forensics.io.outputs import write_bytes_atomic

        write_bytes_atomic(output, out)
    return LinkSimulation(path, bug, dict(result.executable), result.bitstream, out,
                          None if output is None else os.fspath(output))


def _executable(packages, ident: dict):
    for p in packages:
        if ident.get("operator", p.operator) != p.operator:
            continue
        for e in p.executables:
            if e.index == ident["index"]:
                return p, e
    raise InputError(f"executable {ident['index']} is not in the model")


# --- runs: the instructions stage -------------------------------------------------------------------------------

def stage_executable(tensor: str) -> tuple[int, int] | None:
    """`E_K` -> (E, K) for an instructions buffer's tensor name."""
    m = _TENSOR.match(tensor or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def not_submitted(packages, submitted) -> list:
    """Findings for the PARAMETER_CACHING executables whose bitstream a driver never handed the chip:
    `submitted` are the executable indices of the instructions it dumped. Without the caching run the
    weights are never loaded into the chip and every inference computes on whatever the cache held."""
    out = []
    have = set(submitted)
    for p in packages:
        for e in p.executables:
            if e.type == "PARAMETER_CACHING" and e.index not in have:
                out.append({"kind": "not_submitted", "executable": e.index, "type": e.type,
                            "evidence": f"executable {e.index} ({e.type}) was never submitted: the run has no "
                                        f"{INSTRUCTIONS}:{e.index}_K buffer",
                            "hint": "run the parameter caching executable once before the first inference "
                                    "(link --plan lists the order)"})
    return out


def check_stage(run, entry, *, model=None):
    """The link check of one `instructions` (or `params`) buffer of a run, against the run's model (its
    manifest path, or `model`); None when there is no model to check against. Adds `not_submitted` when the
    run's instructions lack the parameter caching executable."""
    import os

    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    path = model or (run.model or {}).get("path")
    if not path:
        return None
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(run.path, path)
    if not os.path.exists(path):
        return None
    packages = read_packages(open_model(path))
    if not packages:
        return None
    data = run.read_buffer(entry)
    if entry.stage != INSTRUCTIONS:
        from forensics.link.bitstream import check_parameters

        return check_parameters(packages, data)
    where = stage_executable(entry.tensor)
    result = check(packages, data, executable=where[0] if where else None)
    submitted = [w[0] for w in (stage_executable(b.tensor) for b in run.buffers if b.stage == INSTRUCTIONS) if w]
    extra = not_submitted(packages, submitted)
    if extra:  # the verdict follows from the findings (judge_link)
        import dataclasses

        result = dataclasses.replace(result, findings=result.findings + tuple(extra))
    return result


def stage_findings(result) -> tuple:
    """The link check of a run's buffer as a compare row's findings: each with its one-line `evidence`."""
    if result is None:
        return ()
    from forensics.link.bitstream import finding_text

    head = {"kind": "link_check", "verdict": result.verdict, "executable": result.executable,
            "bitstream": result.bitstream, "evidence": f"link check: {result.verdict}"}
    return (head,) + tuple(dict(f, evidence=finding_text(f)) for f in result.findings)

