"""Link an Edge TPU instruction bitstream as libedgetpu does, plan a driver's link step, and audit a linked dump.

Facts (libedgetpu driver/instruction_buffers.cc, driver/executable_util.cc, executable/executable.fbs): for each
instruction bitstream the driver links, in this order, the scratch address (when the executable has scratch),
the parameter address (when it has parameters), each mapped input, each mapped output. A field
`{meta{desc, name, batch, position}, offset_bit}` takes `address & 0xFFFFFFFF` (LOWER_32BIT) or `address >> 32`
(UPPER_32BIT), written by ExecutableUtil::CopyUint32: 32 bits from bit `offset_bit`, least significant bit
first, bit k of the value to bit (offset_bit + k) % 8 of byte (offset_bit + k) / 8; the other bits stay.
Inputs and outputs are matched by layer name, and by `batch` into the list of addresses given for that name.
The code here is our own; c/forensics_run.h `fr_link_u32` writes the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.compare.crc import crc32, format_crc
from forensics.core.errors import FormatError, InputError
from forensics.core.verdict import Verdict

KINDS = ("input", "output", "parameter", "scratch")
DESC_KINDS = {"BASE_ADDRESS_INPUT_ACTIVATION": "input", "BASE_ADDRESS_OUTPUT_ACTIVATION": "output",
              "BASE_ADDRESS_PARAMETER": "parameter", "BASE_ADDRESS_SCRATCH": "scratch"}
U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1
# A dump is this executable's bitstream when this share of the bytes outside every field is the model's:
# byte-aligned writes touch one byte per field, while two real models' bitstreams agree on at most ~77%.
IDENTIFY = 0.95
LINKED, MISLINKED, FOREIGN, MATCH, DIFFER = (Verdict.LINKED, Verdict.MISLINKED, Verdict.FOREIGN, Verdict.MATCH,
                                             Verdict.DIFFER)  # a parameter buffer: MATCH / DIFFER


# --- the bit-level write and read (CopyUint32) --------------------------------------------------------------

def _window(size: int, offset_bit: int) -> tuple[int, int]:
    if offset_bit < 0 or offset_bit + 32 > size * 8:
        raise FormatError(f"field at bit {offset_bit} runs past the end of the {size}-byte bitstream "
                          f"(32 bits need bit {offset_bit + 31} < {size * 8})")
    first = offset_bit >> 3
    return first, ((offset_bit & 7) + 32 + 7) >> 3


def write_u32(buf: bytearray, offset_bit: int, value: int) -> None:
    """Write the 32 bits of `value` into `buf` from bit `offset_bit`, LSB first; other bits untouched."""
    first, count = _window(len(buf), offset_bit)
    shift = offset_bit & 7
    word = int.from_bytes(buf[first:first + count], "little")
    mask = U32 << shift
    word = (word & ~mask) | ((value & U32) << shift)
    buf[first:first + count] = word.to_bytes(count, "little")


def read_u32(buf, offset_bit: int) -> int:
    """The 32 bits of `buf` from bit `offset_bit`, LSB first (what the chip reads from a linked field)."""
    first, count = _window(len(buf), offset_bit)
    return (int.from_bytes(bytes(buf[first:first + count]), "little") >> (offset_bit & 7)) & U32


def parse_address(text) -> int:
    """A device address: decimal or 0x-hex (underscores allowed), 0 .. 2**64 - 1."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        s = str(text).strip().replace("_", "")
        try:
            value = int(s, 16) if s.lower().startswith("0x") else int(s, 10)
        except ValueError:
            raise InputError(f"not an address: {_quote(text)} (decimal or 0x-hex, up to 64 bits)") from None
    if not 0 <= value <= U64:
        raise InputError(f"address {_quote(text)} does not fit in 64 bits")
    return value


def _quote(text) -> str:
    s = _printable(str(text)[:80])
    return repr(s) if len(str(text)) <= 80 else repr(s) + "..."


def parse_named(text: str) -> tuple[str, list[int]]:
    """`NAME=ADDR[,ADDR...]` (one address per batch); the name may hold '=' — the last one splits."""
    name, sep, addrs = str(text).rpartition("=")
    if not sep or not name or not addrs:
        raise InputError(f"expected NAME=ADDR[,ADDR...], got {_quote(text)}")
    return name, [parse_address(a) for a in addrs.split(",")]


@dataclass(frozen=True)
class Expectation:
    kind: str
    name: str | None
    address: int

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "address": f"0x{self.address:x}"}


def parse_expect(text: str) -> Expectation:
    """`KIND:NAME=ADDR` split at the first ':' and the last '=' (layer names hold '/' and ';');
    `parameter=ADDR` / `scratch=ADDR` need no name."""
    left, sep, addr = str(text).rpartition("=")
    if not sep or not left:
        raise InputError(f"expected KIND:NAME=ADDR, got {_quote(text)}")
    kind, colon, name = left.partition(":")
    if kind not in KINDS:
        raise InputError(f"expected KIND:NAME=ADDR with KIND one of {', '.join(KINDS)}, got {_quote(text)}")
    if kind in ("input", "output") and not name:
        raise InputError(f"an {kind} expectation needs a layer name: {kind}:NAME=ADDR, got {_quote(text)}")
    return Expectation(kind, name or None, parse_address(addr))


# --- the model's side: executables, bitstreams, fields --------------------------------------------------------

def _kind(f) -> str:
    kind = DESC_KINDS.get(f.desc)
    if kind is None:
        raise FormatError(f"field at bit {f.offset_bit} has description {f.desc}, which libedgetpu does not link")
    return kind


def _check_position(f) -> None:
    if f.position not in ("LOWER_32BIT", "UPPER_32BIT"):
        raise FormatError(f"field at bit {f.offset_bit} has position {f.position} (LOWER_32BIT or UPPER_32BIT "
                          "expected)")


def executables(packages) -> list:
    """(package, executable) for every executable of every edgetpu-custom-op, in the model's order."""
    return [(p, e) for p in packages for e in p.executables]


def find_executable(packages, index: int):
    """The executable `graph` lists as `index` (of the model's first edgetpu-custom-op)."""
    if not packages:
        raise InputError("the model has no edgetpu-custom-op, so no instruction bitstreams")
    exes = packages[0].executables
    if not 0 <= index < len(exes):
        raise InputError(f"executable {index} is not in the model (it has {len(exes)}: 0..{len(exes) - 1})")
    return packages[0], exes[index]


def fields_of(exe, bitstream: int) -> list:
    """The patch-table rows of one bitstream, each checked: a known description and position, and 32 bits
    that lie inside the bitstream (libedgetpu would write past its buffer)."""
    out = [f for f in exe.field_offsets if f.bitstream == bitstream]
    size = exe.bitstream_sizes[bitstream] if bitstream < len(exe.bitstream_sizes) else 0
    for f in out:
        _kind(f)
        _check_position(f)
        _window(size, f.offset_bit)
    return out


def _has(exe, kind: str) -> bool:
    """Whether libedgetpu maps this buffer for the executable (a parameter field of an executable without
    parameters is left as compiled)."""
    if kind == "parameter":
        return exe.parameters_size > 0
    if kind == "scratch":
        return exe.scratch_size_bytes > 0
    return True


def _layers(exe, kind: str) -> dict:
    return {layer.name: layer for layer in (exe.input_layers if kind == "input" else exe.output_layers)}


# --- the plan ------------------------------------------------------------------------------------------------

def _layer_entry(layer, batch_size: int) -> dict:
    return {"name": layer.name, "size_bytes": layer.unpadded_size_bytes, "padded_size_bytes": layer.size_bytes,
            "batches": batch_size}


@dataclass(frozen=True)
class LinkPlan:
    model: str | None
    executables: tuple[dict, ...]
    order: tuple[dict, ...]

    def to_dict(self) -> dict:
        import copy

        return {"model": self.model, "executables": copy.deepcopy(list(self.executables)),
                "order": copy.deepcopy(list(self.order))}


def plan(packages, model_path: str | None = None) -> LinkPlan:
    """The driver's checklist: executables, the order libedgetpu runs them, buffers to map, fields to link."""
    if not packages:
        raise InputError("the model has no edgetpu-custom-op, so nothing to link")
    entries, order = [], []
    for pkg, exe in executables(packages):
        bitstreams = []
        for k, size in enumerate(exe.bitstream_sizes):
            rows = []
            for f in fields_of(exe, k):
                kind = _kind(f)
                rows.append({"desc": f.desc, "name": f.name, "batch": f.batch, "position": f.position,
                             "offset_bit": f.offset_bit, "buffer": kind,
                             "linked": _has(exe, kind)})
            bitstreams.append({"index": k, "size": size, "fields": rows})
        buffers = {"input": [_layer_entry(layer, exe.batch_size) for layer in exe.input_layers],
                   "output": [_layer_entry(layer, exe.batch_size) for layer in exe.output_layers],
                   "parameter": ({"size_bytes": exe.parameters_size, "crc32": format_crc(exe.parameters_crc32)}
                                 if exe.parameters_size else None),
                   "scratch": {"size_bytes": exe.scratch_size_bytes} if exe.scratch_size_bytes else None}
        entries.append({"operator": pkg.operator, "index": exe.index, "type": exe.type,
                        "parameter_caching_token": f"{exe.parameter_caching_token:016x}",
                        "batch_size": exe.batch_size, "bitstreams": bitstreams, "buffers": buffers})
    for pkg in packages:  # libedgetpu: the caching executable once per token, then execution-only per inference
        for exe in pkg.executables:
            if exe.type == "PARAMETER_CACHING":
                order.append({"operator": pkg.operator, "executable": exe.index, "type": exe.type,
                              "when": "once, before the first inference and whenever another model's "
                                      f"parameters were cached since (token {exe.parameter_caching_token:016x})"})
        for exe in pkg.executables:
            if exe.type != "PARAMETER_CACHING":
                order.append({"operator": pkg.operator, "executable": exe.index, "type": exe.type,
                              "when": "every inference"})
    return LinkPlan(model_path, tuple(entries), tuple(order))


# --- linking -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LinkResult:
    executable: int
    type: str
    bitstream: int
    data: bytes = field(repr=False)
    linked: tuple[dict, ...]
    unlinked: tuple[dict, ...]

    def to_dict(self) -> dict:
        return {"executable": {"index": self.executable, "type": self.type}, "bitstream": self.bitstream,
                "size": len(self.data), "crc32": format_crc(crc32(self.data)),
                "fields": [dict(f) for f in self.linked], "unlinked": [dict(f) for f in self.unlinked]}


def link(exe, bitstream: int = 0, *, inputs=None, outputs=None, parameter: int | None = None,
         scratch: int | None = None, allow_unlinked: bool = False) -> LinkResult:
    """Bitstream `bitstream` of `exe` linked as libedgetpu links it.

    `inputs` / `outputs`: {layer name: [address per batch]}; parameter / scratch are linked only when given.
    A layer the fields need but not given is an InputError listing the names, unless `allow_unlinked`
    (those fields keep the model's bits)."""
    if not 0 <= bitstream < len(exe.bitstream_sizes):
        raise InputError(f"executable {exe.index} has no bitstream {bitstream} (it has {len(exe.bitstream_sizes)})")
    given = {kind: {name: [parse_address(a) for a in addrs] for name, addrs in (names or {}).items()}
             for kind, names in (("input", inputs), ("output", outputs))}
    for kind, names in given.items():
        layers = _layers(exe, kind)
        for name in names:
            if name not in layers:
                have = ", ".join(_printable(n) for n in sorted(layers)) or "none"
                raise InputError(f"executable {exe.index} ({exe.type}) has no {kind} layer {_quote(name)} "
                                 f"(its {kind}s: {have})")
    parameter = parse_address(parameter) if parameter is not None else None
    scratch = parse_address(scratch) if scratch is not None else None
    fields = fields_of(exe, bitstream)
    missing = []
    for f in fields:
        kind = _kind(f)
        if kind in given:
            addrs = given[kind].get(f.name)
            if addrs is None or f.batch >= len(addrs):
                label = f.name if addrs is None else f"{f.name} (batch {f.batch}: {len(addrs)} address(es) given)"
                if label not in missing:
                    missing.append(label)
    if missing and not allow_unlinked:
        names = "; ".join(_printable(m) for m in missing).replace("{", "{{").replace("}", "}}")
        raise InputError(f"the fields of executable {exe.index} bitstream {bitstream} need addresses for: {names} "
                         "(give them, or {allow_unlinked} to leave those fields as compiled)", params=True)
    buf = bytearray(exe.bitstreams[bitstream])
    linked, unlinked = [], []

    def put(f, address: int) -> None:
        value = address & U32 if f.position == "LOWER_32BIT" else (address >> 32) & U32
        write_u32(buf, f.offset_bit, value)
        linked.append(_field_row(f, value))

    # libedgetpu's order: scratch, parameter, then each input, then each output, each over the field table
    for kind, address in (("scratch", scratch), ("parameter", parameter)):
        for f in fields:
            if _kind(f) != kind:
                continue
            if address is None:
                unlinked.append(_field_row(f, None))
            else:
                put(f, address)
    for kind in ("input", "output"):
        for name, addrs in given[kind].items():
            for f in fields:
                if _kind(f) == kind and f.name == name and f.batch < len(addrs):
                    put(f, addrs[f.batch])
        for f in fields:
            if _kind(f) == kind and (f.name not in given[kind] or f.batch >= len(given[kind][f.name])):
                unlinked.append(_field_row(f, None))
    return LinkResult(exe.index, exe.type, bitstream, bytes(buf), tuple(linked), tuple(unlinked))


def _field_row(f, value) -> dict:
    return {"desc": f.desc, "buffer": DESC_KINDS[f.desc], "name": f.name, "batch": f.batch,
            "position": f.position, "offset_bit": f.offset_bit,
            "value": None if value is None else f"0x{value:08x}"}


# --- checking a dump -----------------------------------------------------------------------------------------

def _outside_mask(size: int, fields) -> np.ndarray:
    """Per byte, the bits outside every field (1 = instruction bits the driver must leave alone)."""
    bits = np.ones(size * 8, dtype=bool)
    for f in fields:
        lo = max(0, f.offset_bit)
        bits[lo:min(size * 8, f.offset_bit + 32)] = False
    return np.packbits(bits, bitorder="little")


@dataclass(frozen=True)
class _Candidate:
    package: object
    exe: object
    bitstream: int | None  # None: the parameter blob
    score: float
    size: int


def _score(dump: np.ndarray, model: np.ndarray, mask: np.ndarray | None) -> float:
    n = min(len(dump), len(model))
    if n == 0:
        return 0.0
    if mask is None:
        return float(np.count_nonzero(dump[:n] == model[:n])) / n
    return float(np.count_nonzero(((dump[:n] ^ model[:n]) & mask[:n]) == 0)) / n


def identify(packages, dump: np.ndarray, executable: int | None = None):
    """The executable and bitstream (or parameter blob) `dump` is, judged by the bits outside every field;
    None when it is none of this model's."""
    pairs = executables(packages)
    if executable is not None:
        pairs = [find_executable(packages, executable)]
    best = None
    for pkg, exe in pairs:
        for k, view in enumerate(exe.bitstreams):
            model = np.frombuffer(view, dtype=np.uint8)
            mask = _outside_mask(len(model), fields_of(exe, k))
            cand = _Candidate(pkg, exe, k, _score(dump, model, mask), len(model))
            best = _better(best, cand, len(dump))
        if exe.parameters_size:
            model = np.frombuffer(exe.parameters, dtype=np.uint8)
            score = _score(dump, model, None)
            if len(dump) == len(model):  # a parameter buffer of the right size is the parameters, however wrong
                score = max(score, IDENTIFY)
            best = _better(best, _Candidate(pkg, exe, None, score, len(model)), len(dump))
    if best is None or best.score < IDENTIFY:
        return None
    return best


def _better(best, cand, size: int):
    if best is None:
        return cand
    key = (round(cand.score, 9), cand.size == size, -abs(cand.size - size))
    old = (round(best.score, 9), best.size == size, -abs(best.size - size))
    return cand if key > old else best


@dataclass(frozen=True)
class LinkCheck:
    verdict: Verdict
    executable: dict | None
    bitstream: int | None
    size: int
    expected_size: int | None
    fields: tuple[dict, ...] = ()
    addresses: dict | None = None
    findings: tuple[dict, ...] = ()
    score: float | None = None
    diagnosis: object = None  # the diagnose result of a differing parameter buffer (model A, dump B)

    @property
    def exit_code(self) -> int:
        return Verdict(self.verdict).exit_code

    @property
    def kind(self) -> str:
        return "parameters" if self.verdict in (MATCH, DIFFER) else "bitstream"

    def to_dict(self) -> dict:
        import copy

        d = {"verdict": self.verdict, "kind": self.kind if self.verdict != FOREIGN else None,
             "executable": copy.deepcopy(self.executable), "bitstream": self.bitstream, "size": self.size,
             "expected_size": self.expected_size, "match": None if self.score is None else round(self.score, 6),
             "fields": copy.deepcopy(list(self.fields)), "addresses": copy.deepcopy(self.addresses),
             "findings": copy.deepcopy(list(self.findings))}
        if self.diagnosis is not None:
            d["diagnosis"] = self.diagnosis.to_dict() if hasattr(self.diagnosis, "to_dict") else self.diagnosis
        return d


def _hex(v) -> str | None:
    return None if v is None else f"0x{v:x}"


def check(packages, data, *, executable: int | None = None, expect=(), parameters_diagnosis=None) -> LinkCheck:
    """Audit `data` (a driver's dumped bitstream or parameter buffer) against the model's executables.

    `expect`: Expectation objects (or KIND:NAME=ADDR strings). `parameters_diagnosis(model_bytes, dump_bytes)`
    explains a differing parameter buffer (the caller supplies it: diagnose reads dumps, not this module)."""
    if not packages:
        raise InputError("the model has no edgetpu-custom-op, so no instruction bitstreams to check against")
    dump = np.frombuffer(bytes(data), dtype=np.uint8)
    expectations = [e if isinstance(e, Expectation) else parse_expect(e) for e in expect]
    cand = identify(packages, dump, executable)
    if cand is None:
        return LinkCheck(FOREIGN, None, None, len(dump), None)
    exe = cand.exe
    ident = {"index": exe.index, "type": exe.type}
    if len(packages) > 1:
        ident["operator"] = cand.package.operator
    if cand.bitstream is None:
        model = np.frombuffer(exe.parameters, dtype=np.uint8)
        same = len(model) == len(dump) and bool(np.array_equal(model, dump))
        findings = []
        diagnosis = None
        if not same:
            n = min(len(model), len(dump))
            differ = np.flatnonzero(model[:n] != dump[:n])
            findings.append({"kind": "parameters_differ", "bytes": int(len(differ)) + abs(len(model) - len(dump)),
                             "first_offset": int(differ[0]) if len(differ) else n,
                             "sizes": {"dump": len(dump), "parameters": len(model)},
                             "crc32": {"dump": format_crc(crc32(dump)),
                                       "parameters": format_crc(exe.parameters_crc32)}})
            if len(dump) < len(model):
                findings.append({"kind": "truncated", "sizes": {"dump": len(dump), "parameters": len(model)}})
            if parameters_diagnosis is not None:
                diagnosis = parameters_diagnosis(exe.parameters, dump)
        return LinkCheck(MATCH if same else DIFFER, ident, None, len(dump), len(model), (), None,
                         tuple(findings), cand.score, diagnosis)
    return _check_bitstream(exe, cand.bitstream, dump, expectations, ident, cand.score)


def _check_bitstream(exe, k: int, dump: np.ndarray, expectations, ident, score) -> LinkCheck:
    model = np.frombuffer(exe.bitstreams[k], dtype=np.uint8)
    fields = fields_of(exe, k)
    findings = []
    n = min(len(model), len(dump))
    # Each field's value as the chip reads it, and whether it still holds the compiled bits.
    outside = _outside_mask(len(model), fields)
    rows, groups = [], {}
    for f in fields:
        kind = _kind(f)
        row = {"desc": f.desc, "buffer": kind, "name": f.name, "batch": f.batch, "position": f.position,
               "offset_bit": f.offset_bit, "value": None, "state": "missing"}
        info = {"field": f, "row": row, "value": None, "meant": None, "as_compiled": None}
        if f.offset_bit + 32 <= n * 8:
            value, compiled = read_u32(dump, f.offset_bit), read_u32(model, f.offset_bit)
            info.update(value=value, as_compiled=value == compiled, meant=value)
            row["value"] = f"0x{value:08x}"
            aligned = _byte_aligned(dump, model, f.offset_bit, outside)
            if aligned is not None:
                info["memcpy"] = aligned
        rows.append(row)
        groups.setdefault((kind, f.name if kind in ("input", "output") else None, f.batch), []).append(info)
    for infos in groups.values():  # a weak memcpy sign counts when the other half of the address is strong
        if any(i.get("memcpy") and i["memcpy"][1] for i in infos):
            for i in infos:
                if i.get("memcpy"):
                    i["meant"], i["aligned"] = i["memcpy"][0], True
    expected = {}
    for e in expectations:
        key = (e.kind, e.name)
        if e.kind in ("input", "output") and e.name not in _layers(exe, e.kind):
            have = ", ".join(_printable(n) for n in sorted(_layers(exe, e.kind))) or "none"
            raise InputError(f"expected {e.kind} {_quote(e.name)} is not a layer of executable {exe.index} "
                             f"({exe.type}; its {e.kind}s: {have})")
        expected[key] = e.address
    # With an expected address, a field whose low bits were untouched can still be a byte-aligned write:
    # the 4 bytes at offset_bit / 8 hold the expected half while the chip reads something else.
    for (kind, name, batch), infos in groups.items():
        want = expected.get((kind, name))
        if want is None or batch != 0:
            continue
        for info in infos:
            f = info["field"]
            half = want & U32 if f.position == "LOWER_32BIT" else (want >> 32) & U32
            if info["value"] is None or info.get("aligned") or info["value"] == half or f.offset_bit % 8 == 0:
                continue
            b = f.offset_bit // 8
            if b + 4 <= len(dump) and int.from_bytes(dump[b:b + 4].tobytes(), "little") == half:
                info["meant"], info["aligned"] = half, True
    addresses = {"input": {}, "output": {}, "parameter": None, "scratch": None}
    unlinked, aligned_bytes, buffers = [], set(), []
    for (kind, name, batch), infos in groups.items():
        present = [i for i in infos if i["value"] is not None]
        if not present:
            continue
        is_aligned = any(i.get("aligned") for i in present)
        if all(i["as_compiled"] for i in present) and not is_aligned:
            state = "unlinked" if _has(exe, kind) else "unused"
            for i in present:
                i["row"]["state"] = state
            if state == "unlinked":
                label = name if name is not None else kind
                label = label if batch == 0 else f"{label} (batch {batch})"
                if label not in unlinked:
                    unlinked.append(label)
            address = None
        else:
            address = 0
            for i in present:
                i["row"]["state"] = "byte_aligned" if i.get("aligned") else "linked"
                shift = 0 if i["field"].position == "LOWER_32BIT" else 32
                address |= (i["meant"] & U32) << shift
            if is_aligned:
                bad = [i for i in present if i.get("aligned")]
                reads = sum((i["value"] & U32) << (0 if i["field"].position == "LOWER_32BIT" else 32)
                            for i in present)
                findings.append({"kind": "byte_aligned", "buffer": kind, "name": name if name else kind,
                                 "batch": batch, "meant": _hex(address), "reads": _hex(reads),
                                 "fields": [{"position": i["field"].position, "offset_bit": i["field"].offset_bit,
                                             "byte": i["field"].offset_bit // 8,
                                             "meant": f"0x{i['meant']:08x}",
                                             "read": f"0x{i['value']:08x}"} for i in bad]})
                aligned_bytes.update(i["field"].offset_bit // 8 for i in bad)
            if len({i["field"].position for i in present}) == 2:  # both halves known: a range to compare
                buffers.append((kind, name, batch, address))
        if kind in ("input", "output"):
            addresses[kind].setdefault(name, [])
            lst = addresses[kind][name]
            lst.extend([None] * (batch + 1 - len(lst)))
            lst[batch] = _hex(address)
        elif batch == 0:
            addresses[kind] = _hex(address)
    if unlinked:
        findings.append({"kind": "unlinked", "names": unlinked})
    findings.extend(_aliased(exe, buffers))
    for (kind, name), want in expected.items():
        got = [a for (k2, n2, b, a) in buffers if k2 == kind and n2 == name and b == 0]
        if not got:
            continue  # unlinked: already a finding
        have = got[0]
        if have == want:
            continue
        label = name if name is not None else kind
        swapped = ((want & U32) << 32) | (want >> 32)
        kind_name = "halves_swapped" if have == swapped and want != swapped else "unexpected"
        findings.append({"kind": kind_name, "buffer": kind, "name": label, "expected": _hex(want),
                         "address": _hex(have)})
    if n:
        mask = outside[:n]
        differ = np.flatnonzero((dump[:n] ^ model[:n]) & mask)
        offsets = [int(o) for o in differ if int(o) not in aligned_bytes]
        if offsets:
            findings.append({"kind": "corrupted", "offsets": offsets})
    if len(dump) < len(model):
        findings.append({"kind": "truncated", "sizes": {"dump": len(dump), "bitstream": len(model)}})
    verdict = MISLINKED if findings else LINKED
    return LinkCheck(verdict, ident, k, len(dump), len(model), tuple(rows), addresses, tuple(findings), score)


def _byte_aligned(dump: np.ndarray, model: np.ndarray, offset_bit: int, outside: np.ndarray):
    """(value, strong) when the dump shows a `memcpy(bitstream + offset_bit / 8, &value, 4)`: instruction bits
    (outside every field) below the field in its first byte changed, and the field's last offset_bit % 8 bits,
    in the fifth byte, were left as compiled. `strong`: the field's own bits changed too; a write that left them
    as compiled (value 0 over zeros) looks like one corrupted instruction byte unless its other half is
    strong."""
    shift = offset_bit & 7
    b = offset_bit >> 3
    if shift == 0 or b + 5 > len(dump) or b + 5 > len(model):
        return None
    low = (1 << shift) - 1
    if not (int(dump[b]) ^ int(model[b])) & low & int(outside[b]):
        return None
    if (int(dump[b + 4]) ^ int(model[b + 4])) & low:
        return None
    value = int.from_bytes(dump[b:b + 4].tobytes(), "little")
    compiled = int.from_bytes(model[b:b + 4].tobytes(), "little")
    return value, (value >> shift) != (compiled >> shift)


def _aliased(exe, buffers) -> list:
    """Two buffers whose byte ranges overlap: the chip writes (or reads) both in one place."""
    sizes = {"parameter": exe.parameters_size, "scratch": exe.scratch_size_bytes}
    ranges = []
    for kind, name, batch, address in buffers:
        if kind in ("input", "output"):
            layer = _layers(exe, kind).get(name)
            size = layer.size_bytes if layer is not None else 0
        else:
            size = sizes[kind]
        label = (name if name else kind) + (f" (batch {batch})" if batch else "")
        if size > 0:
            ranges.append((address, address + size, label, kind))
    ranges.sort()
    out = []
    for i, (lo, hi, label, kind) in enumerate(ranges):
        for lo2, hi2, label2, kind2 in ranges[i + 1:]:
            if lo2 >= hi:
                break
            out.append({"kind": "aliased", "names": [label, label2], "buffers": [kind, kind2],
                        "addresses": [_hex(lo), _hex(lo2)], "overlap": min(hi, hi2) - lo2,
                        "same_address": lo == lo2})
    return out


# --- the words of a finding ---------------------------------------------------------------------------------

def _printable(text) -> str:
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))


def _short(name) -> str:
    """A layer name that fits a line: TFLite joins fused op names with ';' (the first is the one a person
    recognises); --json has the full names."""
    if not name:
        return "-"
    first = _printable(name).split(";")[0]
    shown = first if len(first) <= 48 else "..." + first[-45:]
    return shown + (" (+fused)" if ";" in str(name) else "")


def finding_text(f: dict) -> str:
    """The one line a driver engineer acts on, for a finding of check()."""
    kind = f["kind"]
    if kind == "byte_aligned":
        where = ", ".join(f"bit {x['offset_bit']} as byte {x['byte']}" for x in f["fields"])
        batch = f" (batch {f['batch']})" if f.get("batch") else ""
        return (f"byte_aligned: {_short(f['name'])}{batch} meant {f['meant']}, the chip reads {f['reads']}: "
                f"{len(f['fields'])} field(s) written as 4 whole bytes at offset_bit / 8 ({where}); write 32 bits "
                "from offset_bit, LSB first (libedgetpu's CopyUint32, fr_link_u32 in C)")
    if kind == "unlinked":
        return (f"unlinked: {', '.join(_short(n) for n in f['names'])} still hold the compiled bits: the driver "
                "never linked them")
    if kind == "aliased":
        a, b = (_short(n) for n in f["names"])
        if f["same_address"]:
            return (f"aliased: {a} and {b} were linked to one address {f['addresses'][0]}: the chip writes both "
                    "into one buffer")
        return (f"aliased: {a} at {f['addresses'][0]} and {b} at {f['addresses'][1]} overlap by {f['overlap']:,} "
                "bytes")
    if kind == "halves_swapped":
        return (f"halves_swapped: {_short(f['name'])} is {f['address']}, expected {f['expected']}: the 32-bit halves "
                "went to the wrong fields (LOWER_32BIT takes address & 0xFFFFFFFF)")
    if kind == "unexpected":
        return f"unexpected: {_short(f['name'])} is {f['address']}, expected {f['expected']}"
    if kind == "corrupted":
        offs = f["offsets"]
        shown = ", ".join(f"0x{o:x}" for o in offs[:8]) + (f" ... ({len(offs):,} bytes)" if len(offs) > 8 else "")
        return f"corrupted: instruction bits outside every field differ from the model at byte(s) {shown}"
    if kind == "truncated":
        sizes = f["sizes"]
        whole = sizes.get("bitstream", sizes.get("parameters"))
        return f"truncated: the dump has {sizes['dump']:,} of {whole:,} bytes"
    if kind == "parameters_differ":
        return (f"parameters_differ: {f['bytes']:,} byte(s) differ from the model's parameters, the first at "
                f"0x{f['first_offset']:x} (crc32 {f['crc32']['dump']}, model {f['crc32']['parameters']})")
    if kind == "not_submitted":
        return f"not_submitted: {f['evidence']}: {f['hint']}"
    if kind == "link_check":
        return f["evidence"]
    return _printable(kind)
