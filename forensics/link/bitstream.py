"""Link an Edge TPU instruction bitstream as libedgetpu does, plan a driver's link step, and audit a linked dump.

Facts (libedgetpu driver/instruction_buffers.cc, driver/executable_util.cc, executable/executable.fbs): for each
instruction bitstream the driver links, in this order, the scratch address (when the executable has scratch),
the parameter address (when it has parameters), each mapped input, each mapped output. A field
`{meta{desc, name, batch, position}, offset_bit}` takes `address & 0xFFFFFFFF` (LOWER_32BIT) or `address >> 32`
(UPPER_32BIT), written by ExecutableUtil::CopyUint32: 32 bits from bit `offset_bit`, least significant bit
first, bit k of the value to bit (offset_bit + k) % 8 of byte (offset_bit + k) / 8; the other bits stay.
Inputs and outputs are matched by layer name, and by `batch` into the list of addresses given for that name.
The code here is our own; c/forensics_run.h `fr_link_u32` writes the same bits.

The check reads every field twice: as the chip reads it (those 32 bits) and as the 4 whole bytes at
offset_bit / 8, which is what a driver that memcpy's each field wrote (the story's driver: PatchVAs in
npu_driver's include/apex_model_fb.hpp). On real models every field starts at bit 6 and the 6 instruction bits
such a write overwrites are 0, so page-aligned addresses written that way change no bit outside the fields:
only the address format (forensics.link.address) and overlapping buffers tell the two readings apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.compare.crc import crc32, format_crc
from forensics.core import serial
from forensics.core.errors import FormatError, InputError
from forensics.core.finding import Finding
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.link import address as va
from forensics.link.describe import finding_text, listed, note_text, quote as _quote, short
from forensics.link import describe

KINDS = ("input", "output", "parameter", "scratch")
DESC_KINDS = {"BASE_ADDRESS_INPUT_ACTIVATION": "input", "BASE_ADDRESS_OUTPUT_ACTIVATION": "output",
              "BASE_ADDRESS_PARAMETER": "parameter", "BASE_ADDRESS_SCRATCH": "scratch"}
U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1
# A dump is this executable's bitstream when this share of its bytes is the model's outside every field (and the
# bits a byte-aligned write of a field overwrites): two real models' bitstreams agree on at most ~77%.
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
    """A device address: decimal or 0x-hex (underscores allowed), 0 .. 2**64 - 1, in the one ASCII number
    grammar (forensics.core.options.integer: `٤٠٩٦` is no address)."""
    from forensics.core.options import integer

    try:
        value = integer(text.strip() if isinstance(text, str) else text)
    except ValueError:
        raise InputError(f"not an address: {_quote(text, 80)} (decimal or 0x-hex in ASCII digits, up to 64 bits)") \
            from None
    if not 0 <= value <= U64:
        raise InputError(f"address {_quote(text, 80)} does not fit in 64 bits")
    return value


def parse_named(text: str) -> tuple[str, list[int]]:
    """`NAME=ADDR[,ADDR...]` (one address per batch); the name may hold '=' — the last one splits."""
    name, sep, addrs = str(text).rpartition("=")
    if not sep or not name or not addrs:
        raise InputError(f"expected NAME=ADDR[,ADDR...], got {_quote(text)}")
    return name, [parse_address(a) for a in addrs.split(",")]


@dataclass(frozen=True)
class Expectation(serial.Serial):
    kind: str
    name: str | None
    address: int = field(metadata=serial.json(encode=va.hex_address, decode=lambda s: int(s, 16)))


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


LISTED = 16  # an error lists at most this many layers (link --plan lists them all)


def _choices(exe, kind: str, names) -> str:
    order = [layer.name for layer in (exe.input_layers if kind == "input" else exe.output_layers)]
    shown = [f"{order.index(n)} {listed(n)}" for n in names[:LISTED]]
    more = f", and {len(names) - LISTED} more ({{plan}} lists them)" if len(names) > LISTED else ""
    return ", ".join(shown).replace("{", "{{").replace("}", "}}") + more


def resolve_layer(exe, kind: str, text) -> str:
    """The full name of the `kind` layer `text` names: the name itself, the short form forensics prints
    (`...expanded_conv_13/expand/Relu6 (+fused)`), the layer's index in the executable (as --plan lists it) or a
    part of one name only, tried in that order. An InputError lists the layers (whole or short, with their
    index) when none or several match."""
    order = [layer.name for layer in (exe.input_layers if kind == "input" else exe.output_layers)]
    text = str(text)
    if text in order:
        return text
    hits = _short_form_hits(order, text)
    if not hits and text.isascii() and text.isdigit() and int(text) < len(order):
        return order[int(text)]
    if not hits:
        hits = [n for n in order if text and text in n]
    if len(hits) == 1:
        return hits[0]
    raise _no_single_layer(exe, kind, text, hits, order)


def _short_form_hits(order: list, text: str) -> list:
    """The layers the short form forensics prints names: `...TAIL` (a name whose first part ends so) and
    `NAME (+fused)` (one with fused operations after its `;`); none when `text` is not in that form."""
    core, fused = text, None
    if core.endswith(" (+fused)"):
        core, fused = core[:-len(" (+fused)")], True
    tail = core.startswith("...")
    core = core[3:] if tail else core
    if not ((tail or fused) and core):
        return []
    return [n for n in order
            if (n.split(";")[0].endswith(core) if tail else n.split(";")[0] == core)
            and (fused is None or (";" in n) == fused)]


def _no_single_layer(exe, kind: str, text: str, hits: list, order: list) -> InputError:
    """The error of a layer name that matches several layers (`hits`: they are listed) or none (the executable's
    layers are)."""
    said = _quote(text).replace("{", "{{").replace("}", "}}")
    where = f"executable {exe.index} ({exe.type})"
    if hits:
        return InputError(f"{kind} {said} matches {len(hits)} {kind} layers of {where}: "
                          f"{_choices(exe, kind, hits)}; give more of the name, or its index", params=True)
    have = _choices(exe, kind, order) if order else "none"
    return InputError(f"{where} has no {kind} layer {said} (give a name, the short form forensics prints, "
                      f"a unique part of a name or its index; its {kind}s: {have})", params=True)


# --- the plan ------------------------------------------------------------------------------------------------

def _layer_entry(layer, batch_size: int) -> dict:
    return {"name": layer.name, "size_bytes": layer.unpadded_size_bytes, "padded_size_bytes": layer.size_bytes,
            "batches": batch_size}


@dataclass(frozen=True)
class LinkPlan(serial.Serial):
    model: str | None
    executables: tuple[dict, ...]
    order: tuple[dict, ...]


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

    # kept: the document holds the bitstream's size and CRC, not its bytes, so it cannot be read back into one
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
    given = _given_layers(exe, inputs, outputs)
    parameter = parse_address(parameter) if parameter is not None else None
    scratch = parse_address(scratch) if scratch is not None else None
    fields = fields_of(exe, bitstream)
    missing = _missing_layers(fields, given)
    if missing and not allow_unlinked:
        names = "; ".join(listed(m) for m in missing).replace("{", "{{").replace("}", "}}")
        raise InputError(f"the fields of executable {exe.index} bitstream {bitstream} need addresses for: {names} "
                         "(give them, or {allow_unlinked} to leave those fields as compiled)", params=True)
    buf = bytearray(exe.bitstreams[bitstream])
    linked, unlinked = _patch(buf, fields, given, scratch, parameter)
    return LinkResult(exe.index, exe.type, bitstream, bytes(buf), tuple(linked), tuple(unlinked))


def _given_layers(exe, inputs, outputs) -> dict:
    """{"input": {layer: [address per batch]}, "output": {...}} of the names given (as resolve_layer takes them)
    and their addresses parsed; a layer given twice, under two spellings, is an InputError."""
    given: dict = {"input": {}, "output": {}}
    for kind, names in (("input", inputs), ("output", outputs)):
        for text, addrs in (names or {}).items():
            name = resolve_layer(exe, kind, text)
            if name in given[kind]:
                raise InputError(f"{kind} {listed(name)!r} is given twice (as {_quote(text)} too); give its batches "
                                 "as one list NAME=ADDR,ADDR")
            given[kind][name] = [parse_address(a) for a in addrs]
    return given


def _missing_layers(fields, given: dict) -> list:
    """The layers (or a layer's batch) whose fields need an address not given, once each, in field order."""
    missing = []
    for f in fields:
        kind = _kind(f)
        if kind in given:
            addrs = given[kind].get(f.name)
            if addrs is None or f.batch >= len(addrs):
                label = f.name if addrs is None else f"{f.name} (batch {f.batch}: {len(addrs)} address(es) given)"
                if label not in missing:
                    missing.append(label)
    return missing


def _patch(buf: bytearray, fields, given: dict, scratch, parameter) -> tuple[list, list]:
    """Write each field's half of its buffer's address into `buf` in libedgetpu's order; (linked rows, unlinked
    rows: fields whose buffer was not given, left as compiled)."""
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
    return linked, unlinked


def _field_row(f, value) -> dict:
    return {"desc": f.desc, "buffer": DESC_KINDS[f.desc], "name": f.name, "batch": f.batch,
            "position": f.position, "offset_bit": f.offset_bit,
            "value": None if value is None else f"0x{value:08x}"}


# --- checking a dump -----------------------------------------------------------------------------------------

def _outside_mask(size: int, fields, *, memcpy: bool = False) -> np.ndarray:
    """Per byte, the bits outside every field (1 = instruction bits the driver must leave alone); with `memcpy`,
    also without the bits below each field in its first byte (a byte-aligned write overwrites those: a dump is
    still identified as its bitstream however many fields were written that way)."""
    bits = np.ones(size * 8, dtype=bool)
    for f in fields:
        lo = max(0, f.offset_bit - (f.offset_bit % 8 if memcpy else 0))
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


def _parameters_candidate(pkg, exe, dump: np.ndarray) -> _Candidate:
    """A parameter buffer of the right size is this executable's parameters however wrong its bytes; of another
    size, when the bytes both hold agree (an upload cut short, or a page-rounded allocation)."""
    model = np.frombuffer(exe.parameters, dtype=np.uint8)
    score = _score(dump, model, None)
    if len(dump) == len(model):
        score = max(score, IDENTIFY)
    return _Candidate(pkg, exe, None, score, len(model))


def identify(packages, dump: np.ndarray, executable: int | None = None, *, bitstreams: bool = True):
    """The executable and bitstream (or parameter blob) `dump` is, judged by the bits outside every field;
    None when it is none of this model's."""
    pairs = executables(packages)
    if executable is not None:
        pairs = [find_executable(packages, executable)]
    best = None
    for pkg, exe in pairs:
        for k, view in enumerate(exe.bitstreams if bitstreams else ()):
            model = np.frombuffer(view, dtype=np.uint8)
            mask = _outside_mask(len(model), fields_of(exe, k), memcpy=True)
            cand = _Candidate(pkg, exe, k, _score(dump, model, mask), len(model))
            best = _better(best, cand, len(dump))
        if exe.parameters_size:
            best = _better(best, _parameters_candidate(pkg, exe, dump), len(dump))
    if best is None or best.score < IDENTIFY:
        return None
    return best


def _better(best, cand, size: int):
    if best is None:
        return cand
    key = (round(cand.score, 9), cand.size == size, -abs(cand.size - size))
    old = (round(best.score, 9), best.size == size, -abs(best.size - size))
    return cand if key > old else best


def _findings_of(docs) -> tuple:
    """The core Findings a saved check's `findings` hold: the facts under their keys, the sentence its own."""
    return tuple(Finding(d["kind"], d.get("sentence", ""),
                         facts={k: v for k, v in d.items() if k != "sentence"}) for d in docs)


@dataclass(frozen=True)
class LinkCheck(serial.Serial):
    """What a dump is against a model: `kind` "bitstream" (an executable's instruction bitstream, its fields read
    back), "parameters" (its parameter blob) or None (FOREIGN: none of the model's). Its verdict, message and
    reasons come from judge_link."""

    JSON_DERIVED = ("verdict",)
    JSON_ORDER = ("verdict", "kind", "executable", "bitstream", "size", "expected_size", "match", "fields",
                  "addresses", "buffers", "findings", "notes")

    kind: str | None
    executable: dict | None
    bitstream: int | None
    size: int
    expected_size: int | None
    fields: tuple[dict, ...] = ()
    addresses: dict | None = None
    # forensics.core.finding.Finding (a dict of facts is made one)
    findings: tuple = field(default=(), metadata=serial.json(encode=lambda fs: [serial.encode(f.to_dict()) for f in fs],
                                                              decode=_findings_of))
    score: float | None = field(default=None, metadata=serial.json("match", encode=lambda v: round(v, 6)))
    # the diagnose result of a differing parameter buffer (model A, dump B); read back as its document (link
    # imports no diagnose)
    diagnosis: object = field(default=None, metadata=serial.json(omit_none=True))
    buffers: tuple[dict, ...] = ()  # each buffer the fields link: its address read both ways, and which holds
    notes: tuple[dict, ...] = ()  # what the dump cannot say: buffers a byte-aligned write would leave the same

    def __post_init__(self):
        # each finding is the one core Finding: its facts as the check found them, its sentence from describe
        object.__setattr__(self, "findings", tuple(Finding.of(f, finding_text) for f in self.findings))

    @property
    def judgement(self) -> Judgement:
        return judge_link(self)

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code



def judge_link(result: LinkCheck) -> Judgement:
    """The one judgement of a link check: FOREIGN (none of the model's), MATCH / DIFFER (a parameter buffer),
    LINKED / MISLINKED (a bitstream: any finding mislinks it). Reasons: one per kind of finding, then each note
    (a byte-aligned write would leave the same bytes) and a dump longer than what it was compared with."""
    d = {"kind": result.kind, "executable": result.executable, "bitstream": result.bitstream, "size": result.size,
         "expected_size": result.expected_size, "findings": result.findings, "buffers": result.buffers,
         "notes": result.notes}
    if result.kind is None:
        return Judgement(FOREIGN, describe.message(d))
    bad = bool(result.findings)
    if result.kind == "parameters":
        verdict = DIFFER if bad else MATCH
    else:
        verdict = MISLINKED if bad else LINKED
    reasons, seen = [], set()
    for f in result.findings:
        if f["kind"] not in seen:
            seen.add(f["kind"])
            reasons.append(Reason(f["kind"], f.sentence))
    reasons.extend(Reason(n["kind"], note_text(n)) for n in result.notes)
    if result.expected_size is not None and result.size > result.expected_size:
        reasons.append(Reason("longer", describe.longer(d)))
    return Judgement(verdict, describe.message(d), tuple(reasons))


def _hex(v) -> str | None:
    return None if v is None else va.hex_address(v)


def _ident(packages, cand) -> dict:
    ident = {"index": cand.exe.index, "type": cand.exe.type}
    if len(packages) > 1:
        ident["operator"] = cand.package.operator
    return ident


def check(packages, data, *, executable: int | None = None, expect=(), parameters_diagnosis=None) -> LinkCheck:
    """Audit `data` (a driver's dumped bitstream or parameter buffer) against the model's executables.

    `expect`: Expectation objects (or KIND:NAME=ADDR strings; NAME as resolve_layer takes it), one per buffer.
    `parameters_diagnosis(model_bytes, dump_bytes)` explains a differing parameter buffer (the caller supplies
    it: diagnose reads dumps, not this module)."""
    if not packages:
        raise InputError("the model has no edgetpu-custom-op, so no instruction bitstreams to check against")
    dump = np.frombuffer(bytes(data), dtype=np.uint8)
    expectations = [e if isinstance(e, Expectation) else parse_expect(e) for e in expect]
    cand = identify(packages, dump, executable)
    if cand is None:
        return LinkCheck(None, None, None, len(dump), None)
    if cand.bitstream is None:
        return _parameters(cand, _ident(packages, cand), dump, parameters_diagnosis)
    return _check_bitstream(cand.exe, cand.bitstream, dump, expectations, _ident(packages, cand), cand.score)


def check_parameters(packages, data, *, executable: int | None = None, explain=None) -> LinkCheck:
    """Whether `data` is a parameter buffer of this model: MATCH (byte for byte an executable's parameters, or
    their prefix when the dump is longer), DIFFER (this model's parameters, not as the model holds them: the
    right size, or an upload cut short — with `explain(model_bytes, dump_bytes)`'s result as the diagnosis, when
    given) or FOREIGN (another model's parameters, or no parameters at all). Pure: bytes in, a LinkCheck out."""
    if not packages:
        raise InputError("the model has no edgetpu-custom-op, so no parameters to check against")
    dump = np.frombuffer(bytes(data), dtype=np.uint8)
    cand = identify(packages, dump, executable, bitstreams=False)
    if cand is None:
        return LinkCheck(None, None, None, len(dump), None)
    return _parameters(cand, _ident(packages, cand), dump, explain)


def _parameters(cand, ident: dict, dump: np.ndarray, explain) -> LinkCheck:
    exe = cand.exe
    model = np.frombuffer(exe.parameters, dtype=np.uint8)
    n = min(len(model), len(dump))
    differ = np.flatnonzero(model[:n] != dump[:n])
    findings, diagnosis = [], None
    if len(differ) or len(dump) < len(model):
        findings.append({"kind": "parameters_differ", "bytes": int(len(differ)) + len(model) - n,
                         "first_offset": int(differ[0]) if len(differ) else n,
                         "sizes": {"dump": len(dump), "parameters": len(model)},
                         "crc32": {"dump": format_crc(crc32(dump)), "parameters": format_crc(exe.parameters_crc32)}})
        if len(dump) < len(model):
            findings.append({"kind": "truncated", "sizes": {"dump": len(dump), "parameters": len(model)}})
        if explain is not None:
            diagnosis = explain(exe.parameters, dump)
    return LinkCheck("parameters", ident, None, len(dump), len(model), findings=tuple(findings),
                     score=cand.score, diagnosis=diagnosis)


# --- one field read back both ways, and the buffers the fields make -----------------------------------------

@dataclass
class _Read:
    """One patch-table field of a dump: the 32 bits the chip reads (`chip`), the 4 whole bytes at offset_bit / 8
    a memcpy would have written (`word`), and what the bits around it say about how it was written."""

    field: object
    kind: str
    row: dict
    chip: int | None = None
    compiled: int | None = None
    word: int | None = None
    memcpy_fits: bool = True   # the field's last offset_bit % 8 bits (in the fifth byte) are as compiled
    clobbered: bool = False    # instruction bits below the field, in its first byte, changed
    strong: bool = False       # ... and the field's own bits changed too (not a 0 over zeros)

    @property
    def present(self) -> bool:
        return self.chip is not None

    @property
    def as_compiled(self) -> bool:
        return self.chip == self.compiled and not self.clobbered

    def value(self, reading: str) -> int:
        return self.word if reading == BYTES else self.chip


CHIP, BYTES = "bit_exact", "byte_aligned"  # the two readings of a field (`written_as` in --json)


def _read(f, dump: np.ndarray, model: np.ndarray, outside: np.ndarray, n: int, windows=frozenset()) -> _Read:
    kind = _kind(f)
    row = {"desc": f.desc, "buffer": kind, "name": f.name, "batch": f.batch, "position": f.position,
           "offset_bit": f.offset_bit, "value": None, "as_bytes": None, "state": "missing"}
    r = _Read(f, kind, row)
    if f.offset_bit + 32 > n * 8:
        return r
    r.chip, r.compiled = read_u32(dump, f.offset_bit), read_u32(model, f.offset_bit)
    shift, b = f.offset_bit & 7, f.offset_bit >> 3
    r.word = int.from_bytes(dump[b:b + 4].tobytes(), "little")
    if shift:
        low = (1 << shift) - 1
        # a memcpy of 4 bytes never reaches the fifth, unless another field's memcpy starts there
        r.memcpy_fits = b + 4 in windows or not (int(dump[b + 4]) ^ int(model[b + 4])) & low
        r.clobbered = bool((int(dump[b]) ^ int(model[b])) & low & int(outside[b]))
        compiled_word = int.from_bytes(model[b:b + 4].tobytes(), "little")
        r.strong = (r.word >> shift) != (compiled_word >> shift)
    row["value"], row["as_bytes"] = f"0x{r.chip:08x}", f"0x{r.word:08x}"
    return r


@dataclass
class _Buffer:
    """The fields of one buffer (a layer's batch, the parameters, the scratch) and how the dump is read for it."""

    kind: str
    name: str | None
    batch: int
    reads: list
    mapped: bool          # libedgetpu maps this buffer for the executable (else its fields stay as compiled)
    size: int
    state: str = "linked"  # missing / unlinked / unused / linked
    reading: str | None = None  # CHIP or BYTES once decided
    decided_by: str | None = None

    @property
    def label(self) -> str:
        label = self.name if self.name is not None else self.kind
        return label if self.batch == 0 else f"{label} (batch {self.batch})"

    @property
    def present(self) -> list:
        return [r for r in self.reads if r.present]

    @property
    def positions(self) -> set:
        return {r.field.position for r in self.present}

    def halves(self, reading: str) -> dict | None:
        """{position: value} when every field of each half holds one value in this reading, else None."""
        out = {}
        for r in self.present:
            v = r.value(reading)
            if out.setdefault(r.field.position, v) != v:
                return None
        return out

    def address(self, reading: str) -> int | None:
        halves = self.halves(reading)
        if halves is None:
            return None
        return (halves.get("UPPER_32BIT", 0) << 32) | halves.get("LOWER_32BIT", 0)

    def illegal(self, reading: str) -> str | None:
        """Why this reading's address is none the chip can map (None: legal, or not known: no upper half here)."""
        a = self.address(reading)
        if a is None or "UPPER_32BIT" not in self.positions:
            return None
        return va.illegal_reason(a, self.size if len(self.positions) == 2 else 1)

    def plausible(self, reading: str) -> bool:
        return self.halves(reading) is not None and self.illegal(reading) is None

    @property
    def memcpy_possible(self) -> bool:
        return all(r.memcpy_fits for r in self.present)

    def matches(self, reading: str, want: int) -> bool:
        halves = self.halves(reading)
        return halves is not None and all(
            v == (want & U32 if pos == "LOWER_32BIT" else (want >> 32) & U32) for pos, v in halves.items())

    @property
    def whole(self) -> bool:
        """Both halves are in this bitstream: the buffer's byte range is known."""
        return len(self.positions) == 2


def _buffers(exe, reads) -> list:
    sizes = {"parameter": exe.parameters_size, "scratch": exe.scratch_size_bytes}
    groups: dict = {}
    for r in reads:
        key = (r.kind, r.field.name if r.kind in ("input", "output") else None, r.field.batch)
        groups.setdefault(key, []).append(r)
    out = []
    for (kind, name, batch), rs in groups.items():
        if kind in ("input", "output"):
            layer = _layers(exe, kind).get(name)
            size = layer.size_bytes if layer is not None else 0
        else:
            size = sizes[kind]
        out.append(_Buffer(kind, name, batch, rs, _has(exe, kind), size))
    return out


def _decide_by_bits(b: _Buffer) -> None:
    """What the bits alone say: unlinked (every field as compiled), a memcpy (instruction bits below a field
    overwritten and its fifth byte untouched), a bit-exact write (a fifth byte changed: a memcpy of 4 bytes never
    reaches it), or nothing yet (both would leave these bytes)."""
    present = b.present
    if not present:
        b.state = "missing"
        return
    if all(r.as_compiled for r in present):
        b.state, b.reading = ("unlinked" if b.mapped else "unused"), CHIP
        return
    fits = b.memcpy_possible
    if fits and any(r.clobbered and r.strong for r in present):
        b.reading, b.decided_by = BYTES, "instruction_bits"
    elif not fits or b.address(CHIP) == b.address(BYTES) and b.halves(CHIP) is not None:
        b.reading = CHIP


def _decide_by_expect(b: _Buffer, want: int | None) -> None:
    if want is None:
        return
    if b.state == "unlinked":
        # fields as compiled that hold the address expected (address 0 over compiled zeros, as the story's
        # add_model console maps its input at device address 0): linked there, as the driver meant
        if b.matches(CHIP, want):
            b.state, b.decided_by = "linked", None
        return
    if b.state != "linked":
        return
    if b.matches(CHIP, want):
        b.reading, b.decided_by = CHIP, None
    elif b.reading != CHIP and b.memcpy_possible and b.matches(BYTES, want):
        b.reading, b.decided_by = BYTES, b.decided_by or "expected"


def _decide_by_address(b: _Buffer) -> None:
    """Both readings fit the bits: the one that gives a legal address (with one value per half) holds."""
    if b.reading is not None or b.state != "linked":
        return
    chip, bytes_ = b.plausible(CHIP), b.plausible(BYTES)
    if bytes_ and not chip:
        b.reading = BYTES
        b.decided_by = "inconsistent" if b.halves(CHIP) is None else "illegal_address"
    elif not bytes_:
        b.reading = CHIP


def _ranges(buffers, reading_of) -> list:
    out = []
    for b in buffers:
        if not b.mapped or b.state != "linked" or not b.whole or b.size <= 0:
            continue
        a = b.address(reading_of(b))
        if a is not None:
            out.append((a, a + b.size, b))
    return out


def _overlaps(ranges) -> list:
    ranges = sorted(ranges, key=lambda t: (t[0], t[1]))
    pairs = []
    for i, (lo, hi, b) in enumerate(ranges):
        for lo2, hi2, b2 in ranges[i + 1:]:
            if lo2 >= hi:
                break
            pairs.append(((lo, hi, b), (lo2, hi2, b2)))
    return pairs


def _decide_by_overlap(buffers) -> list:
    """Buffers both readings leave legal: read as 4 bytes when that removes overlaps the 32-bit reading shows
    (one driver writes every field one way); else as the chip reads them. Returns those still undecided."""
    open_ = [b for b in buffers if b.reading is None and b.state == "linked"]
    if not open_:
        return []
    as_chip = len(_overlaps(_ranges(buffers, lambda b: b.reading or CHIP)))
    as_bytes = len(_overlaps(_ranges(buffers, lambda b: b.reading or BYTES)))
    for b in open_:
        b.reading, b.decided_by = (BYTES, "overlap") if as_bytes < as_chip else (CHIP, None)
    return [b for b in open_ if b.reading == CHIP]


def _resolve_expectations(exe, expectations) -> dict:
    expected = {}
    for e in expectations:
        name = resolve_layer(exe, e.kind, e.name) if e.kind in ("input", "output") else None
        key = (e.kind, name)
        if key in expected:
            label = repr(listed(name) if name is not None else e.kind).replace("{", "{{").replace("}", "}}")
            raise InputError(f"{{expect}} is given twice for {e.kind} {label}: give one address per buffer",
                             params=True)
        expected[key] = e.address
    return expected


def _check_bitstream(exe, k: int, dump: np.ndarray, expectations, ident, score) -> LinkCheck:
    model = np.frombuffer(exe.bitstreams[k], dtype=np.uint8)
    fields = fields_of(exe, k)
    expected = _resolve_expectations(exe, expectations)
    n = min(len(model), len(dump))
    outside = _outside_mask(len(model), fields)
    windows = frozenset(f.offset_bit // 8 + i for f in fields for i in range(4))  # what memcpy's could write
    reads = [_read(f, dump, model, outside, n, windows) for f in fields]
    buffers = _buffers(exe, reads)
    undecided = _decide(buffers, expected)
    findings, aligned_bytes = _findings(exe, buffers, expected)
    findings.extend(_damage(dump, model, n, outside, aligned_bytes))
    notes = [{"kind": "byte_aligned_possible", "buffer": b.kind, "name": b.name if b.name else b.kind,
              "batch": b.batch, "address": _hex(b.address(CHIP)), "as_bytes": _hex(b.address(BYTES))}
             for b in undecided if b.mapped and (b.kind, b.name) not in expected]
    return LinkCheck("bitstream", ident, k, len(dump), len(model), tuple(r.row for r in reads),
                     _addresses(buffers), tuple(findings), score, buffers=tuple(_buffer_row(b) for b in buffers),
                     notes=tuple(notes))


def _decide(buffers, expected: dict) -> list:
    """How each buffer was written, decided by its bits, the address expected, a legal address, then overlaps
    (each field's row gets its buffer's state); the buffers both readings still fit."""
    for b in buffers:
        _decide_by_bits(b)
        _decide_by_expect(b, expected.get((b.kind, b.name)) if b.batch == 0 else None)
        _decide_by_address(b)
    undecided = _decide_by_overlap(buffers)
    for b in buffers:
        for r in b.present:
            r.row["state"] = b.state if b.state != "linked" else ("byte_aligned" if b.reading == BYTES else "linked")
    return undecided


def _damage(dump: np.ndarray, model: np.ndarray, n: int, outside: np.ndarray, aligned_bytes: set) -> list:
    """Instruction bits outside every field that differ (bytes a byte-aligned write explains left out), and a
    dump shorter than its bitstream."""
    findings = []
    if n:
        differ = np.flatnonzero((dump[:n] ^ model[:n]) & outside[:n])
        offsets = [int(o) for o in differ if int(o) not in aligned_bytes]
        if offsets:
            findings.append({"kind": "corrupted", "offsets": offsets})
    if len(dump) < len(model):
        findings.append({"kind": "truncated", "sizes": {"dump": len(dump), "bitstream": len(model)}})
    return findings


def _addresses(buffers) -> dict:
    addresses = {"input": {}, "output": {}, "parameter": None, "scratch": None}
    for b in buffers:
        if b.state == "missing":
            continue
        address = b.address(b.reading) if b.state == "linked" else None
        if b.kind in ("input", "output"):
            lst = addresses[b.kind].setdefault(b.name, [])
            lst.extend([None] * (b.batch + 1 - len(lst)))
            lst[b.batch] = _hex(address)
        elif b.batch == 0:
            addresses[b.kind] = _hex(address)
    return addresses


def _buffer_row(b: _Buffer) -> dict:
    state = b.state
    if state == "linked" and b.halves(b.reading) is None:
        state = "inconsistent"
    meant, reads = b.address(b.reading or CHIP), b.address(CHIP)
    return {"buffer": b.kind, "name": b.name if b.name else b.kind, "batch": b.batch, "mapped": b.mapped,
            "size_bytes": b.size, "state": state, "written_as": b.reading if state == "linked" else None,
            "decided_by": b.decided_by, "address": _hex(meant) if state == "linked" else None,
            "reads": _hex(reads) if b.present else None,
            "as_bytes": _hex(b.address(BYTES)) if b.present else None,
            "halves": sorted(b.positions),
            "space": va.space(meant) if state == "linked" and b.whole else None,
            "alignment": va.alignment(meant) if state == "linked" and b.whole else None,
            "legal": (b.illegal(CHIP) is None) if state == "linked" and "UPPER_32BIT" in b.positions else None}


def _findings(exe, buffers, expected) -> tuple[list, set]:
    findings, aligned_bytes, unlinked = [], set(), []
    for b in sorted(buffers, key=lambda b: KINDS.index(b.kind)):  # inputs, outputs, parameter, scratch
        if b.state == "unlinked" and b.label not in unlinked:
            unlinked.append(b.label)
        if b.state != "linked":
            continue
        findings.extend(_linked_findings(b, aligned_bytes))
    if unlinked:
        findings.append({"kind": "unlinked", "names": unlinked})
    whole = [(b.kind, b.name, b.batch, b.address(b.reading)) for b in buffers
             if b.mapped and b.state == "linked" and b.whole and b.halves(b.reading) is not None]
    findings.extend(_aliased(exe, whole))
    findings.extend(_unexpected(expected, whole))
    return findings, aligned_bytes


def _linked_findings(b: _Buffer, aligned_bytes: set) -> list:
    """What is wrong with one linked buffer: its fields do not hold one address (inconsistent), or they were
    written as 4 whole bytes (byte_aligned: the bytes they spill into go into `aligned_bytes`) and/or the address
    the chip reads is none it can map (illegal_address)."""
    if b.halves(b.reading) is None:
        return [_inconsistent(b)]
    findings = []
    name = b.name if b.name else b.kind
    if b.reading == BYTES:
        bad = [r for r in b.present if r.field.offset_bit % 8]
        findings.append({"kind": "byte_aligned", "buffer": b.kind, "name": name, "batch": b.batch,
                         "meant": _hex(b.address(BYTES)), "reads": _hex(b.address(CHIP)),
                         "reason": b.decided_by,
                         "fields": [{"position": r.field.position, "offset_bit": r.field.offset_bit,
                                     "byte": r.field.offset_bit // 8, "meant": f"0x{r.word:08x}",
                                     "read": f"0x{r.chip:08x}"} for r in bad]})
        aligned_bytes.update(r.field.offset_bit // 8 for r in bad)
    why = b.illegal(CHIP) if b.mapped and b.halves(CHIP) is not None else None
    if why is not None:
        chip = b.address(CHIP)
        findings.append({"kind": "illegal_address", "buffer": b.kind, "name": name, "batch": b.batch,
                         "address": _hex(chip), "reason": why, "space": va.space(chip),
                         "reserved_bits": va.reserved_bits(chip)})
    return findings


def _unexpected(expected: dict, whole: list) -> list:
    """Each expected address a whole, consistent buffer (batch 0) does not hold: its halves exchanged
    (halves_swapped) or another one (unexpected). A buffer unlinked or inconsistent is already a finding."""
    findings = []
    for (kind, name), want in expected.items():
        got = [a for (k2, n2, batch, a) in whole if k2 == kind and n2 == name and batch == 0]
        if not got or got[0] == want:
            continue  # unlinked or inconsistent: already a finding
        have = got[0]
        label = name if name is not None else kind
        swapped = ((want & U32) << 32) | (want >> 32)
        kind_name = "halves_swapped" if have == swapped and want != swapped else "unexpected"
        findings.append({"kind": kind_name, "buffer": kind, "name": label, "expected": _hex(want),
                         "address": _hex(have)})
    return findings


def _inconsistent(b: _Buffer) -> dict:
    """A buffer whose fields of one half do not hold one value (read the way its other fields say it was
    written): linked in some fields only, or to different addresses. The first such half is reported."""
    by_position: dict = {}
    for r in b.present:
        by_position.setdefault(r.field.position, []).append(r)
    position, rs = next((p, rs) for p, rs in by_position.items() if len({r.value(b.reading or CHIP) for r in rs}) > 1)
    partly = any(r.as_compiled for r in rs) and not all(r.as_compiled for r in rs)
    return {"kind": "inconsistent", "buffer": b.kind, "name": b.name if b.name else b.kind, "batch": b.batch,
            "position": position, "reason": "partly_linked" if partly else "different_addresses",
            "fields": [{"offset_bit": r.field.offset_bit, "value": f"0x{r.value(b.reading or CHIP):08x}",
                        "as_compiled": r.as_compiled} for r in rs]}


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
