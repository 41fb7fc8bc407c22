"""The words of the link check: a finding's line, a note's line and the judgement's message, from the facts.

The check (forensics.link.bitstream) returns facts — kinds, addresses, bit offsets, reason codes; this module is
the one place they become sentences (the terminal, --json's `message` / `reasons`, compare's stage rows and
diagnose all print these).
"""

from __future__ import annotations

from forensics.link import address as va

NAME_LIMIT = 32          # a shortened layer name keeps the last characters of its first op (as tables show it)
LISTED_LIMIT = 80        # an error lists a name whole up to this length, else its short form (both are accepted)


def printable(text) -> str:
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))


def quote(text, limit: int = 400) -> str:
    """A user's value as an error echoes it (repr), whole up to `limit` characters."""
    s = printable(str(text)[:limit])
    return repr(s) if len(str(text)) <= limit else repr(s) + f"... ({len(str(text)):,} characters)"


def short(name) -> str:
    """A layer name that fits a line: TFLite joins fused op names with ';' (the first is the one a person
    recognises) and long paths keep their last characters; `link --input/--output/--expect` take this form back.
    --json has the full names."""
    if not name:
        return "-"
    first = printable(name).split(";")[0]
    shown = first if len(first) <= NAME_LIMIT else "..." + first[-(NAME_LIMIT - 3):]
    return shown + (" (+fused)" if ";" in str(name) else "")


def listed(name) -> str:
    """A name as an error lists it: whole when it is short, else its short form (never cut in the middle)."""
    text = printable(name)
    return text if len(text) <= LISTED_LIMIT else short(name)


def _label(f: dict) -> str:
    batch = f" (batch {f['batch']})" if f.get("batch") else ""
    return f"{short(f['name'])}{batch}"


REASONS = {  # why an address is not one the chip can map (forensics.link.address)
    va.SIMPLE_RESERVED: "bit 63 is clear (a simple address), so bits 62:25 must be 0",
    va.EXTENDED_RESERVED_BITS: "bit 63 is set (an extended address), so bits 62:34 must be 0",
    va.EXTENDED_SEGMENT: "an extended address outside libedgetpu's one 4 GB extended segment (its upper half "
                         "must be 0x80000000)",
    va.CROSSES: "the buffer's last byte lies outside the address space its first byte is in",
}

DECIDED = {  # how a buffer's fields show they were written as the 4 whole bytes at offset_bit / 8
    "instruction_bits": "seen in the instruction bits below a field, which a 32-bit write leaves",
    "illegal_address": "seen in the address the chip reads, which is illegal",
    "inconsistent": "seen in its fields, which disagree read from offset_bit",
    "overlap": "seen in the buffers, which overlap read from offset_bit (or they were linked bit-exact to "
               "overlapping addresses: --expect settles it)",
    "expected": "seen in the 4 bytes, which hold the address expected",
}


def finding_text(f: dict) -> str:
    """The one line a driver engineer acts on, for a finding of check()."""
    kind = f["kind"]
    if kind == "byte_aligned":
        return _byte_aligned_text(f)
    if kind == "illegal_address":
        return _illegal_address_text(f)
    if kind == "inconsistent":
        return _inconsistent_text(f)
    if kind == "unlinked":
        return (f"unlinked: {', '.join(short(n) for n in f['names'])} still hold the compiled bits: the driver "
                "never linked them (or linked device address 0 where the compiled bits are 0: --expect "
                "KIND:NAME=0 settles it)")
    if kind == "aliased":
        return _aliased_text(f)
    if kind == "halves_swapped":
        return (f"halves_swapped: {short(f['name'])} is {f['address']}, expected {f['expected']}: the 32-bit halves "
                "went to the wrong fields (LOWER_32BIT takes address & 0xFFFFFFFF)")
    if kind == "unexpected":
        return f"unexpected: {short(f['name'])} is {f['address']}, expected {f['expected']}"
    if kind == "corrupted":
        return _corrupted_text(f)
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
    return printable(kind)


def _byte_aligned_text(f: dict) -> str:
    """A buffer written as 4 whole bytes at offset_bit / 8: the fields, what showed it, and the fix."""
    where = ", ".join(f"bit {x['offset_bit']} as byte {x['byte']}" for x in f["fields"])
    why = DECIDED.get(f.get("reason"), "")
    return (f"byte_aligned: {_label(f)} meant {f['meant']}, the chip reads {f['reads']}: "
            f"{len(f['fields'])} field(s) written as 4 whole bytes at offset_bit / 8 ({where})"
            + (f", {why}" if why else "")
            + "; write 32 bits from offset_bit, LSB first (libedgetpu's CopyUint32, fr_link_u32 in C)")


def _illegal_address_text(f: dict) -> str:
    """An address the chip faults on: why, with the first reserved bits set (none for a buffer crossing spaces)."""
    bits = f.get("reserved_bits") or []
    shown = (f" (bit{'s' if len(bits) > 1 else ''} {', '.join(map(str, bits[:4]))}"
             f"{' ...' if len(bits) > 4 else ''} set)") if bits and f["reason"] != va.CROSSES else ""
    return (f"illegal_address: the chip reads {f['address']} for {_label(f)}, which faults: "
            f"{REASONS.get(f['reason'], f['reason'])}{shown}")


def _inconsistent_text(f: dict) -> str:
    """A half whose fields disagree: what each holds, partly linked or linked to different values."""
    held = ", ".join(f"bit {x['offset_bit']} " + ("as compiled" if x["as_compiled"] else x["value"])
                     for x in f["fields"])
    what = ("linked in only some of its" if f["reason"] == "partly_linked" else "linked to different values in its")
    return (f"inconsistent: {_label(f)} was {what} {len(f['fields'])} {f['position']} fields ({held}): link "
            "every field of a buffer with its one address")


def _aliased_text(f: dict) -> str:
    """Two buffers at one address, or overlapping by some bytes."""
    a, b = (short(n) for n in f["names"])
    if f["same_address"]:
        return (f"aliased: {a} and {b} were linked to one address {f['addresses'][0]}: the chip uses one "
                "buffer for both")
    return (f"aliased: {a} at {f['addresses'][0]} and {b} at {f['addresses'][1]} overlap by {f['overlap']:,} "
            "bytes")


def _corrupted_text(f: dict) -> str:
    """Instruction bits outside the fields that differ: the first 8 byte offsets, and how many in all."""
    offs = f["offsets"]
    shown = ", ".join(f"0x{o:x}" for o in offs[:8]) + (f" ... ({len(offs):,} bytes)" if len(offs) > 8 else "")
    return f"corrupted: instruction bits outside every field differ from the model at byte(s) {shown}"


def note_text(n: dict) -> str:
    """What the dump cannot say about one buffer (a note beside a verdict, not a finding)."""
    if n["kind"] == "byte_aligned_possible":
        import shlex

        kind = n["buffer"]
        spelled = f"{kind}:{short(n['name'])}" if kind in ("input", "output") else kind
        return (f"note: {_label(n)} reads {n['address']}, and {n['as_bytes']} written as 4 whole bytes at "
                f"offset_bit / 8 would leave the same bytes: --expect {shlex.quote(spelled + '=' + n['address'])} "
                f"or --expect {shlex.quote(spelled + '=' + n['as_bytes'])} (the address the driver meant) settles it")
    return printable(n["kind"])


def what(d: dict) -> str:
    """`executable 0 EXECUTION_ONLY bitstream 0` / `the parameters of executable 1 PARAMETER_CACHING (4,096 bytes)`."""
    exe = d["executable"]
    if d["kind"] == "parameters":
        return f"the parameters of executable {exe['index']} {exe['type']} ({d['size']:,} bytes)"
    return f"executable {exe['index']} {exe['type']} bitstream {d['bitstream']}"


def message(d: dict) -> str:
    """The judgement's message: what the dump is, and the kinds of finding (or what was checked)."""
    if d["kind"] is None:
        return (f"{d['size']:,} bytes that are none of this model's instruction bitstreams or parameter buffers "
                "(another model's, or not an instruction stream)")
    head = what(d)
    kinds: dict = {}
    for f in d["findings"]:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + (len(f["names"]) if f["kind"] == "unlinked" else 1)
    if kinds:
        return head + ": " + ", ".join(f"{n} {k}" for k, n in kinds.items())
    if d["kind"] == "parameters":
        return head + ": byte-identical to the model's"
    linked = [b for b in d["buffers"] if b["state"] in ("linked", "byte_aligned") and b["mapped"]]
    text = head + f": {len(linked)} buffer(s) linked, at legal addresses"
    if d["notes"]:
        text += f"; a byte-aligned write would leave the same bytes for {len(d['notes'])} (--expect settles it)"
    return text


def longer(d: dict) -> str:
    return (f"the dump has {d['size'] - d['expected_size']:,} bytes more than the {d['expected_size']:,} of the "
            f"{d['kind']} (not compared)")
