"""The DarwiNN virtual address format: whether an address the chip reads from a linked field can be mapped.

Facts (libedgetpu driver/hardware_structures.h): an address is *simple* — bit 63 clear, bits 62:25 reserved
(0), bits 24:12 the page table index, bits 11:0 the page offset — or *extended* — bit 63 set, bits 62:34
reserved (0), bits 33:21 the extended page table index, bits 20:12 the host table index. libedgetpu keeps
the extended space in one 4 GB segment from kExtendedAddressSpaceStart 0x8000000000000000
(kExtendedAddressSpacePrefix: the upper 32 bits of every extended address are 0x80000000). An address that
is neither faults on the chip. The code here is our own.
"""

from __future__ import annotations

EXTENDED_BIT = 1 << 63
SIMPLE_LIMIT = 1 << 25                     # bits 62:25 reserved: a simple address is below 32 MiB
EXTENDED_RESERVED = ((1 << 63) - 1) & ~((1 << 34) - 1)   # bits 62:34
EXTENDED_PREFIX = 0x80000000               # the upper half of every address in libedgetpu's extended segment
PAGE = 4096
TENSOR_ALIGNMENT = 64                      # TFLite aligns tensors to 64 bytes: a mapped host buffer keeps it

# Why an address is not one the chip can use (the `reason` of an illegal_address finding).
SIMPLE_RESERVED = "simple_reserved"        # bit 63 clear, some of bits 62:25 set
EXTENDED_RESERVED_BITS = "extended_reserved"   # bit 63 set, some of bits 62:34 set
EXTENDED_SEGMENT = "extended_segment"      # extended, but its upper half is not 0x80000000 (bits 33:32 set)
CROSSES = "crosses"                        # the first byte is legal, the buffer's last byte is not


def space(address: int) -> str:
    """`simple` or `extended`: which of the two formats bit 63 says `address` is in."""
    return "extended" if address & EXTENDED_BIT else "simple"


def _start_reason(address: int) -> str | None:
    if not address & EXTENDED_BIT:
        return SIMPLE_RESERVED if address >= SIMPLE_LIMIT else None
    if address & EXTENDED_RESERVED:
        return EXTENDED_RESERVED_BITS
    if address >> 32 != EXTENDED_PREFIX:
        return EXTENDED_SEGMENT
    return None


def illegal_reason(address: int, size: int = 1) -> str | None:
    """None when every byte of `address` .. `address + size - 1` is a legal DarwiNN address in one space
    (simple, or libedgetpu's extended segment); else the reason code."""
    reason = _start_reason(address)
    if reason is not None or size <= 1:
        return reason
    last = address + size - 1
    if last >> 64 or _start_reason(last) is not None or space(last) != space(address):
        return CROSSES
    return None


def reserved_bits(address: int) -> list[int]:
    """The bits set that the address's format reserves (62:25 simple, 62:34 extended; 33:32 outside
    libedgetpu's extended segment), highest first."""
    if address & EXTENDED_BIT:
        low = 32 if not address & EXTENDED_RESERVED else 34
    else:
        low = 25
    return [bit for bit in range(62, low - 1, -1) if address >> bit & 1]


def alignment(address: int) -> str:
    """`page` (4 KB), `tensor` (64 bytes: where TFLite puts a tensor inside a mapped page) or `none`."""
    if address % PAGE == 0:
        return "page"
    return "tensor" if address % TENSOR_ALIGNMENT == 0 else "none"


def hex_address(address: int) -> str:
    """An address as text: one that needs more than 32 bits is written with all 16 hex digits, so the
    addresses of one table line up and bit 57 of 0x0200000000022000 is where a reader counts it."""
    return f"0x{address:016x}" if address > 0xFFFFFFFF else f"0x{address:x}"
