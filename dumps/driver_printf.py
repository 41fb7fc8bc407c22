"""The real driver's log lines, printed from its own format strings and arithmetic (no forensics code).

github wangki-kyu/npu_driver: npu_driver/Device.c (npudriverDumpKnownCsrs, the DPC's [DPC-OUT] and [DPC-SCAN-*]
lines), npu_driver/Queue.c ([BS-DUMP], `Registering input`, [INPUT-CHK] and its xor-fold, the 0xCC prefill,
[INPUT-VERIFY]), npu_test_console/npu_test_console.cpp and add_model_test_console/add_model_test_console.cpp
(the consoles' output dumps). The format strings are the driver's, word for word; `printf` below is a small
C printf (the conversions those strings use), and each builder does the driver's arithmetic over the bytes it
is given: what the driver reads past a buffer's end (its mapping is whole pages) is the `beyond` bytes. Nothing
here comes from forensics.
"""

from __future__ import annotations

import re

PAGE_SIZE = 4096
KVA = 0xFFFFB20C4A3B2000  # a kernel address for %p (Windows prints 16 upper-case hex digits)

_CONVERSION = re.compile(r"%([-0 #+]*)(\d*)(?:\.(\d+))?(ll|l|z|h)?([sdiuxXp%])")


def printf(fmt: str, *args) -> str:
    """C's printf for the conversions the driver uses: %s %d %u %x %X %p %% with flags, width, l/ll/z."""
    values = iter(args)

    def one(m: re.Match) -> str:
        flags, width, precision, _, conv = m.groups()
        if conv == "%":
            return "%"
        value = next(values)
        if conv == "p":
            return f"{value:016X}"
        if conv == "s":
            text = str(value)
        elif conv in "xX":
            text = format(value & ((1 << 64) - 1), "x" if conv == "x" else "X")
            if precision:
                text = text.rjust(int(precision), "0")
        else:
            text = str(int(value))
        if width:
            if "-" in flags:
                text = text.ljust(int(width))
            elif "0" in flags and conv != "s":
                text = text.rjust(int(width), "0")
            else:
                text = text.rjust(int(width))
        return text

    out = _CONVERSION.sub(one, fmt)
    assert next(values, None) is None, "more arguments than conversions"
    return out.rstrip("\n")


def _b(data: bytes, at: int, n: int, beyond: bytes) -> list[int]:
    """n bytes of the mapping from `at`: the buffer's, then what lies past its end."""
    mem = data + beyond
    assert at + n <= len(mem), "give more `beyond` bytes"
    return list(mem[at:at + n])


ROW16 = ("%02x %02x %02x %02x %02x %02x %02x %02x  %02x %02x %02x %02x %02x %02x %02x %02x")

# Device.c, npudriverDumpKnownCsrs: the named registers it reads, in its order, by name and offset.
KNOWN_CSRS = [
    ("PAGE_TABLE_SIZE", 0x46000), ("EXTENDED_TABLE", 0x46008), ("KERNEL_HIB_TRANSLATION_EN", 0x46010),
    ("HIB_INSTRUCTION_CREDITS", 0x48740), ("HIB_INPUT_ACTV_CREDITS", 0x48748), ("HIB_PARAM_CREDITS", 0x48750),
    ("HIB_OUTPUT_ACTV_CREDITS", 0x48758), ("AXI_AW_CREDIT_INSERTION", 0x48220),
    ("AXI_W_CREDIT_INSERTION", 0x48260), ("AXI_AW_CREDIT_OCCUPANCY", 0x48210), ("AXI_W_CREDIT_OCCUPANCY", 0x48250),
    ("SCALAR_RUN_STATUS", 0x44258), ("INFEED_RUN_STATUS", 0x441E0), ("OUTFEED_RUN_STATUS", 0x44220),
    ("PARAMETER_POP_RUN_STATUS", 0x441A8), ("AVDATA_POP_RUN_STATUS", 0x44168), ("INSTR_QUEUE_STATUS", 0x48570),
    ("INSTR_QUEUE_CONTROL", 0x48568), ("INSTR_QUEUE_INT_STATUS", 0x485C8), ("WIRE_INT_PENDING", 0x48778),
    ("WIRE_INT_MASK", 0x48780), ("USER_HIB_ERROR_STATUS", 0x486F0), ("SCALAR_CORE_ERROR_STATUS", 0x41A0),
]


def dump_known_csrs(tag: str, values: dict) -> list[str]:
    """R32(name, off): `[CSR@%s] %-32s @0x%05x = 0x%08x` with apex_read_register_32's value (0 if not given)."""
    return [printf("[CSR@%s] %-32s @0x%05x = 0x%08x\n", tag, name, off, values.get(name, 0) & 0xFFFFFFFF)
            for name, off in KNOWN_CSRS]


def registering_input(pte: int, size: int) -> str:
    pages = (size + PAGE_SIZE - 1) >> 12
    return printf("[%s] Registering input: PTE[%lu] size=%lu pages\n", "NpuEvtIoDeviceControl", pte, pages)


def input_chk(data: bytes, beyond: bytes = b"") -> list[str]:
    """Queue.c's INPUT-CHK: first8 / last8 of the first up-to-4 pages (last8 clamped to the buffer when it
    has 8 bytes, else at 0; first8 never clamped), first8 of the last page, the xor-fold of the buffer."""
    total = len(data)
    page_count = (total + PAGE_SIZE - 1) >> 12
    out = []
    for pp in range(min(page_count, 4)):
        base = pp * PAGE_SIZE
        tail = base + PAGE_SIZE - 8
        if tail + 8 > total:
            tail = total - 8 if total >= 8 else 0
        out.append(printf("[INPUT-CHK] page[%u] first8=%02x %02x %02x %02x %02x %02x %02x %02x  "
                          "last8(@0x%llx)=%02x %02x %02x %02x %02x %02x %02x %02x\n",
                          pp, *_b(data, base, 8, beyond), tail, *_b(data, tail, 8, beyond)))
    if page_count > 4:
        last = page_count - 1
        out.append(printf("[INPUT-CHK] page[%u] (last) first8=%02x %02x %02x %02x %02x %02x %02x %02x\n",
                          last, *_b(data, last * PAGE_SIZE, 8, beyond)))
    out.append(printf("[INPUT-CHK] xor-fold pre-submit = 0x%016llX over %llu bytes (%lu pages)\n",
                      xor_fold(data), total, page_count))
    return out


def xor_fold(data: bytes) -> int:
    """The driver's loop: XOR of the 8-byte little-endian qwords, the tail bytes as one shifted partial qword."""
    chk = 0
    whole = len(data) // 8
    for q in range(whole):
        chk ^= int.from_bytes(data[q * 8:q * 8 + 8], "little")
    tail_q = 0
    for t in range(whole * 8, len(data)):
        tail_q |= data[t] << ((t - whole * 8) * 8)
    return chk ^ tail_q


def input_verify(data: bytes, pre: int) -> list[str]:
    chk = xor_fold(data)
    return [printf("[INPUT-VERIFY] xor-fold post-DONE = 0x%016llX (pre=0x%016llX) \u2192 %s\n", chk, pre,
                   "PASS (host RAM stable)" if chk == pre else "CHANGED (chip stray-wrote!)"),
            printf("[INPUT-VERIFY] page[0] first8 post-DONE=%02x %02x %02x %02x %02x %02x %02x %02x\n",
                   *_b(data, 0, 8, b"\0" * 8))]


def prefill(size: int) -> str:
    return printf("[%s] Output buffer pre-filled with 0xCC (size=%llu) at kVA=%p\n", "NpuEvtIoDeviceControl", size,
                  KVA + 0x10000)


def bs_dump(bitstream: bytes, device_va: int) -> list[str]:
    n = len(bitstream)
    out = [printf("[BS-DUMP] kernel VA=%p size=%lu (0x%lx) deviceVA=0x%llx\n", KVA, n, n, device_va)]
    for row in range(4):
        out.append(printf(f"[BS-DUMP] [{row:x}0] " + ROW16 + "\n", *_b(bitstream, row * 16, 16, b"\0" * 64)))
    return out


def dpc_out(out_buf: bytes, out_va: int, tag: str = "USER", beyond: bytes = b"") -> list[str]:
    """Device.c's DPC scan of the whole output buffer: nonzero, non-0xCC and the first non-0xCC offset, the 16
    bytes there (if they fit), 16 bytes at size-64 (if size >= 64), then the first 64 bytes in rows."""
    size = len(out_buf)
    nz = sum(1 for b in out_buf if b != 0)
    ncc = sum(1 for b in out_buf if b != 0xCC)
    first = next((j for j, b in enumerate(out_buf) if b != 0xCC), 0xFFFFFFFF)
    dump_len = min(size, 64)
    out = [printf("[DPC-OUT/%s] kernel VA=%p outVA=0x%llx size=%llu nonzero=%lu non-0xCC=%lu (FULL scan) "
                  "firstNon0xCC@0x%lx\n", tag, KVA + 0x20000, out_va, size, nz, ncc, first)]
    if first != 0xFFFFFFFF and first + 16 <= size:
        out.append(printf("[DPC-OUT/%s] firstNon0xCC@0x%lx: " + ROW16 + "\n", tag, first,
                          *_b(out_buf, first, 16, beyond)))
    if size >= 64:
        t = size - 64
        out.append(printf("[DPC-OUT/%s] tail64@0x%lx: " + ROW16 + "\n", tag, t, *_b(out_buf, t, 16, beyond)))
    out.append(printf("[DPC-OUT] [00] " + ROW16 + "\n", *_b(out_buf, 0, 16, beyond)))
    for row, more in ((1, 16), (2, 32), (3, 48)):
        if dump_len > more:
            out.append(printf(f"[DPC-OUT] [{row}0] " + ROW16 + "\n", *_b(out_buf, row * 16, 16, beyond)))
    return out


def dpc_scan(name: str, data: bytes) -> str:
    """[DPC-SCAN-INFERBitstream] / [DPC-SCAN-InputImage] / [DPC-SCAN-PARAMBitstream]: size, first and last 16."""
    sz = len(data)
    return printf("[DPC-SCAN-" + name + "] sz=%llu first16=" + ROW16 + " | tail16=" + ROW16 + "\n", sz,
                  *data[:16], *data[sz - 16:])


def dpc_scan_ring(name: str, page: bytes, start: int) -> list[str]:
    """[DPC-SCAN-DescRing] (start 32) / [DPC-SCAN-StatusBlock] (16): non-0xA5 bytes past `start`, the first."""
    non = [j for j in range(start, PAGE_SIZE) if page[j] != 0xA5]
    first = non[0] if non else 0xFFFFFFFF
    out = [printf("[DPC-SCAN-" + name + "] post-%d non-0xA5=%lu firstAt=0x%lx\n", start, len(non), first)]
    if non:
        out.append(printf("[DPC-SCAN-" + name + "] @0x%lx: " + ROW16 + "\n", first, *page[first:first + 16]))
    return out


def console_output(out_buf: bytes) -> list[str]:
    """npu_test_console: `--- Output buffer (N bytes, M non-zero) ---` then the first 64 bytes, 16 a row, each
    `%02x ` behind `  [%04x] ` (std::hex, setfill('0')); a partial last row ends at std::endl."""
    nonzero = sum(1 for b in out_buf if b)
    text = f"\n--- Output buffer ({len(out_buf)} bytes, {nonzero} non-zero) ---\n" + _console_rows(out_buf)
    return text.split("\n")


def _console_rows(out_buf: bytes) -> str:
    """The consoles' loop over the first 64 bytes: `  [%04x] ` at each 16th, `%02x ` each, a newline after the
    16th of a row, then std::endl."""
    text = ""
    for i in range(min(len(out_buf), 64)):
        if i % 16 == 0:
            text += f"  [{i:04x}] "
        text += f"{out_buf[i]:02x} "
        if i % 16 == 15:
            text += "\n"
    return text + "\n"


def add_model_console(out_buf: bytes, golden: bytes) -> list[str]:
    """add_model_test_console: `--- output buffer dump ---`, `  total=N  non-zero=M`, the rows, then the golden
    compare's `  expected:` / `  actual  :` bytes (HexDump) of the first min(N, 16)."""
    nonzero = sum(1 for b in out_buf if b)
    text = f"\n--- output buffer dump ---\n  total={len(out_buf)}  non-zero={nonzero}\n" + _console_rows(out_buf)
    n = min(len(out_buf), len(golden))
    text += "\n--- golden compare ---\n"
    text += "  expected:" + "".join(f" {b:02x}" for b in golden[:n]) + "\n"
    text += "  actual  :" + "".join(f" {b:02x}" for b in out_buf[:n]) + "\n"
    return text.split("\n")


# Lines of the driver that hold no value to check (Korean and arrows among them): what a real log has around
# the lines above.
CHATTER = [
    printf("[%s] Pre-reset: IDLEGENERATOR bit32 \ud074\ub9ac\uc5b4\n", "NpuEvtDevicePrepareHardware"),
    printf("[%s] Pre-reset: DMA pause \uc694\uccad (0x486D8 = 1)\n", "NpuEvtDevicePrepareHardware"),
    printf("[%s] DMA_BURST_LIMITER \u2192 0\n", "NpuEvtDevicePrepareHardware"),
    printf("[RB] INSTR_QUEUE_CONTROL = 0x%llx  (\uae30\ub300 0x5)\n", 5),
    printf("[DPC] FATAL_ERR observed in WIRE_INT_PENDING (bit 0x1000) \u2014 see USER_HIB_ERROR\n"),
    printf("[%s] HIB \ucd08\uae30\ud654 \uc644\ub8cc: PAGE_TABLE_INIT=0x%llx MSIX_TABLE_INIT=0x%llx (%d\ud68c)\n",
           "NpuEvtDevicePrepareHardware", 1, 1, 3),
]


def dbgview(lines: list[str], start: int = 1, t0: float = 0.0) -> list[str]:
    """DbgView's saved log: the line number (%08d), seconds since capture start, a tab, the kernel message (a
    kernel DbgPrint has no `[pid]` column: Win32 messages do)."""
    return [f"{start + i:08d}\t{t0 + i * 0.0000125:.8f}\t{text}" for i, text in enumerate(lines)]


def saved(lines: list[str], encoding: str) -> bytes:
    """The log as Windows saves it: CRLF, in a code page (a character it cannot hold becomes `?`, as
    WideCharToMultiByte's default) or UTF-16 with its BOM."""
    text = "\r\n".join(lines) + "\r\n"
    if encoding == "utf-16":
        return text.encode("utf-16")
    return text.encode(encoding, errors="replace")
