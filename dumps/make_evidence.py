"""Regenerate the bundled driver-side evidence: the texts a Windows driver's engineer has instead of files.

Deterministic (no clock, no randomness): `python dumps/make_evidence.py` rewrites dumps/evidence/ from the
bytes dumps/make_dumps.py builds, and the test suite checks the committed files equal a fresh run. The
formats are written here from their published shapes, not by forensics, so reading them back with forensics
checks its readers against an independent writer:
- windbg_db.txt        WinDbg `db` of our driver's convert_scores (8,136 bytes), pasted with its prompt line
- dbgview.log          DbgView's saved log: the broken driver DbgPrint-ing its convert_scores as `db` lines
- driver.log           our driver's log of one inference with an `[FP]` line per buffer (forensics/buffer/fingerprint.py's
                       one-line form: size, zlib CRC32, xor-fold of little-endian 64-bit words, HEAD/MID/TAIL)
- vendor.log           a driver log in its own words (`crc XXXXXXXX len N`), for `verify --pattern`
- windbg_unreadable.txt  a `db` paste where WinDbg could not read one line (`??`)
- convert_scores_alloc.bin  our convert_scores in its page-rounded DMA allocation (8,192 bytes, 0xCC after it)
- csr_libedgetpu.log   libedgetpu's VLOG(5) register trace (glog prefix) of a bring-up
- csr_driver.log       our driver's `[CSR@tag]` trace of the same bring-up behind DbgView columns: one value
                       differs (tileconfig0) and one write is missing (instruction_queue_size)
- csr_before.json, csr_after.txt  register snapshots after the bring-up (JSON; `offset = value` lines)
The real driver (github wangki-kyu/npu_driver), its lines printed by dumps/driver_printf.py from its own format
strings and arithmetic, for one inference of the broken driver's story (the DMA stopped at anchor 1500):
- npu_driver.log       its DbgView capture (line number, seconds, the kernel message), saved in cp949 as a Korean
                       Windows saves it: the driver's Korean messages, its `→`; [BS-DUMP], `Registering input`,
                       [INPUT-CHK], the 0xCC prefill, the [CSR@pre-submit] / [CSR@post-DONE] register dumps (values
                       read: hib error status 0x1 after the inference), [DPC-OUT], [DPC-SCAN-*], [INPUT-VERIFY]
- npu_console.txt      npu_test_console's output: `--- Output buffer (8192 bytes, ... non-zero) ---` and its rows
- broken_scores_alloc.bin  that output buffer: the broken convert_scores in its 8,192-byte allocation
- short_input.bin, short_input.log  a 4,100-byte input and its [INPUT-CHK] lines: page[1]'s first8 reads 4
                       bytes past the buffer's end (the driver does not clamp it)
"""

from __future__ import annotations

import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import driver_printf as drv  # noqa: E402  (the real driver's lines from its format strings)
import make_dumps  # noqa: E402  (the story's bytes, built the same way as dumps/{libedgetpu,ours,broken})

WINDBG_BASE = 0xFFFFB20C4A3B2000   # where the paste says the buffer sits (any kernel address will do)


def _ascii(chunk: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)


def windbg_db(data: bytes, base: int) -> list[str]:
    """WinDbg's `db` lines: `hhhhhhhh`llllllll  16 bytes with '-' after the 8th  ASCII`; a short last line is
    padded so its ASCII column stays aligned."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at:at + 16]
        cells = [f"{b:02x}" for b in chunk] + ["  "] * (16 - len(chunk))
        hexpart = " ".join(cells[:8]) + ("-" if len(chunk) > 8 else " ") + " ".join(cells[8:])
        address = base + at
        lines.append(f"{address >> 32:08x}`{address & 0xFFFFFFFF:08x}  {hexpart}  {_ascii(chunk)}")
    return lines


def fp_line(tag: str, data: bytes) -> str:
    """The one-line `[FP]` form of forensics/buffer/fingerprint.py, written from its specification."""
    padded = data + bytes(-len(data) % 8)
    fold = 0
    for at in range(0, len(padded), 8):
        fold ^= int.from_bytes(padded[at:at + 8], "little")
    size = len(data)
    head, mid, tail = 0, max(0, size // 2 - 8), max(0, size - 16)

    def peek(at: int) -> str:
        return f"@0x{at:x}=" + " ".join(f"{b:02x}" for b in data[at:at + 16])

    return (f"[FP] {tag} size={size} crc32=0x{zlib.crc32(data):08x} xor64=0x{fold:016x} "
            f"head{peek(head)} mid{peek(mid)} tail{peek(tail)}")


def dbgview(lines: list[str], start: int = 1, pid: int = 4, t0: float = 12.5) -> list[str]:
    """DbgView's saved-log columns: line number, seconds since capture start, then `[pid] ` and the text."""
    return [f"{start + i:08d}\t{t0 + i * 0.00002:.8f}\t[{pid}] {text}" for i, text in enumerate(lines)]


# A bring-up as libedgetpu's kernel driver path writes it (offsets BAR2-relative, names from beagle_csr.json):
# (op, offset, value, width); reads of a status register repeat while it settles.
BRING_UP = [
    ("W", 0x44018, 0x0, 64),           # scalarCoreRunControl: stop
    ("W", 0x48788, 0x7F, 64),          # tileconfig0
    ("R", 0x48788, 0x7F, 64),
    ("W", 0x48590, 0x100000, 64),      # instruction_queue_base
    ("W", 0x485A0, 0x2000, 64),        # instruction_queue_size
    ("W", 0x48568, 0x5, 64),           # instruction_queue_control: enable
    ("R", 0x48570, 0x0, 64),           # instruction_queue_status: polled until 1
    ("R", 0x48570, 0x0, 64),
    ("R", 0x48570, 0x1, 64),
    ("W", 0x485F8, 0x200000, 64),      # input_actv_queue_base
    ("W", 0x48608, 0x2000, 64),        # input_actv_queue_size
    ("W", 0x48528, 0x300000, 64),      # output_actv_queue_base
    ("W", 0x48538, 0x2000, 64),        # output_actv_queue_size
    ("W", 0x48660, 0x400000, 64),      # param_queue_base
    ("W", 0x48670, 0x2000, 64),        # param_queue_size
    ("W", 0x486F8, 0x0, 64),           # hib_error_mask
    ("W", 0x44018, 0x1, 64),           # scalarCoreRunControl: run
    ("W", 0x485A8, 0x1, 64),           # instruction_queue_tail
    ("R", 0x486F0, 0x0, 64),           # hib_error_status
]
NAMES = {0x44018: "scalarCoreRunControl", 0x48788: "tileconfig0", 0x48590: "instruction_queue_base", 0x485A0: "instruction_queue_size",
         0x48568: "instruction_queue_control", 0x48570: "instruction_queue_status",
         0x485F8: "input_actv_queue_base", 0x48608: "input_actv_queue_size", 0x48528: "output_actv_queue_base",
         0x48538: "output_actv_queue_size", 0x48660: "param_queue_base", 0x48670: "param_queue_size",
         0x486F8: "hib_error_mask", 0x486F0: "hib_error_status", 0x485A8: "instruction_queue_tail"}


def csr_libedgetpu() -> list[str]:
    """kernel_registers.cc's VLOG(5) lines behind glog's prefix (`value: =` on reads, as libedgetpu prints)."""
    lines = ["I1130 09:24:35.100000  4793 beagle_pci_driver_provider.cc:112] Opening /dev/apex_0"]
    for i, (op, offset, value, _) in enumerate(BRING_UP):
        stamp = f"I1130 09:24:35.{200000 + i * 37:06d}  4793 kernel_registers.cc:{190 if op == 'W' else 211}]"
        if op == "W":
            lines.append(f"{stamp} Write: offset = 0x{offset:016x}, value = 0x{value:016x}")
        else:
            lines.append(f"{stamp} Read: offset = 0x{offset:016x}, value: = 0x{value:016x}")
    return lines


def csr_driver() -> list[str]:
    """Our driver's `[CSR@tag] [R|W] NAME @0xOFF = 0xVALUE` lines, as DbgView saved them. Two bugs: tileconfig0
    written 0x3f (half the tiles) and instruction_queue_size never written."""
    text = ["EdgeTpu: DriverEntry", "EdgeTpu: BAR2 mapped at ffffb20c`4a000000"]
    for op, offset, value, _ in BRING_UP:
        if offset == 0x485A0:
            continue
        if offset == 0x48788:
            value = 0x3F
        tag = "open" if offset in (0x44018, 0x48788) else "queue"
        text.append(f"[CSR@{tag}] {op} {NAMES[offset]} @0x{offset:x} = 0x{value:016x}")
    return dbgview(text, start=40, pid=4, t0=3.25)


def snapshots() -> tuple[str, str]:
    """Two register dumps after the bring-up: JSON by name and offset (libedgetpu's side) and `offset = value`
    lines (ours), compared by offset. Ours differs in tileconfig0 and never set instruction_queue_size."""
    final = {}
    for op, offset, value, _ in BRING_UP:
        if op == "W":
            final[offset] = value
    ours = {k: (0x3F if k == 0x48788 else v) for k, v in final.items() if k != 0x485A0}
    before = "{\n" + ",\n".join(f'  "0x{k:x}": "0x{v:x}"' for k, v in final.items()) + "\n}"
    after = "\n".join(f"0x{k:05x} = 0x{v:016x}" for k, v in ours.items())
    return before, after


def bitstream_bytes(size: int) -> bytes:
    """An instruction bitstream's stand-in (not shipped: its rows and sizes are in the log): the header bytes the
    driver's comments quote (80 0f 00 28 c7 00 00 00), then bytes of a fixed LCG."""
    out = bytearray(b"\x80\x0f\x00\x28\xc7\x00\x00\x00")
    x = 12345
    while len(out) < size:
        x = (1103515245 * x + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


# What the broken driver's registers read before and after the inference (npudriverDumpKnownCsrs): the queue on,
# then an inbound page fault (hib error status bit 0) and the fatal and host interrupts pending.
CSRS_PRE = {"PAGE_TABLE_SIZE": 0x2000, "EXTENDED_TABLE": 0x1800, "KERNEL_HIB_TRANSLATION_EN": 0x1,
            "HIB_INSTRUCTION_CREDITS": 0x80, "HIB_INPUT_ACTV_CREDITS": 0x80, "HIB_PARAM_CREDITS": 0x80,
            "HIB_OUTPUT_ACTV_CREDITS": 0x80, "INSTR_QUEUE_STATUS": 0x1, "INSTR_QUEUE_CONTROL": 0x5}
CSRS_POST = {**CSRS_PRE, "AXI_AW_CREDIT_INSERTION": 0x5E8, "AXI_W_CREDIT_INSERTION": 0x5E8,
             "INSTR_QUEUE_INT_STATUS": 0x1, "WIRE_INT_PENDING": 0x1011, "USER_HIB_ERROR_STATUS": 0x1}
INPUT_VA, OUTPUT_VA, BITSTREAM_VA = 0x631000, 0x8000000000000000, 0x600000


def npu_driver_run(story: dict) -> dict[str, list[str] | bytes]:
    """The real driver's lines of one inference of the broken story (driver_printf), in the order Queue.c and
    Device.c print them, among its other messages, as DbgView saves them; the console's output; the buffers."""
    inp = story["ours/input.bin"]
    out = alloc(story["broken/convert_scores.bin"])
    bitstream = bitstream_bytes(12288)
    ring = bytes(32) + b"\xa5" * (drv.PAGE_SIZE - 32)
    block = bytes(16) + b"\xa5" * (drv.PAGE_SIZE - 16)
    lines = [*drv.CHATTER[:3], "[NpuEvtIoDeviceControl] IOCTL_INFER", *drv.bs_dump(bitstream, BITSTREAM_VA),
             drv.registering_input(INPUT_VA >> 12, len(inp)), *drv.input_chk(inp), drv.prefill(len(out)),
             *drv.dump_known_csrs("pre-submit", CSRS_PRE), "[NpuEvtIoDeviceControl] submitting 2 descriptors",
             *drv.CHATTER[3:5], *drv.dpc_out(out, OUTPUT_VA), *drv.dpc_scan_ring("DescRing", ring, 32),
             *drv.dpc_scan_ring("StatusBlock", block, 16), drv.dpc_scan("INFERBitstream", bitstream),
             drv.dpc_scan("InputImage", inp), "[NpuEvtInterruptDpc] Input MDL unlocked",
             *drv.dump_known_csrs("post-DONE", CSRS_POST), *drv.input_verify(inp, drv.xor_fold(inp)),
             drv.CHATTER[5]]
    console = ["success to get device handle!", "Loading model...",
               f"Model loaded: bitstream size = {len(bitstream)} bytes", "Calling IOCTL_INFER...", "INFER succeeded!",
               *drv.console_output(out)]
    short = bytes((i * 7 + 3) & 0xFF for i in range(4100))
    return {"evidence/npu_driver.log": drv.saved(drv.dbgview(lines, start=210, t0=41.5), "cp949"),
            "evidence/npu_console.txt": drv.saved(console, "cp949"),
            "evidence/broken_scores_alloc.bin": out,
            "evidence/short_input.bin": short,
            # past the 4,100 bytes, page 1 of its mapping holds what the driver's pool left there
            "evidence/short_input.log": drv.saved(drv.dbgview(drv.input_chk(short, beyond=b"\xa5" * 8), start=1),
                                                  "cp949")}


def alloc(data: bytes, page: int = 4096, prefill: int = 0xCC) -> bytes:
    """A page-rounded DMA allocation holding the tensor at offset 0, the rest still the driver's prefill."""
    return data + bytes([prefill]) * (-len(data) % page)


def build() -> dict[str, bytes]:
    """Every file of dumps/evidence/ as {relative path: bytes}."""
    story = make_dumps.build()
    ours_scores = story["ours/convert_scores.bin"]
    broken_scores = story["broken/convert_scores.bin"]
    files: dict[str, list[str]] = {}
    files["evidence/windbg_db.txt"] = [f"0: kd> db {WINDBG_BASE >> 32:08x}`{WINDBG_BASE & 0xFFFFFFFF:08x} "
                                       f"L{len(ours_scores):x}"] + windbg_db(ours_scores, WINDBG_BASE)
    files["evidence/dbgview.log"] = dbgview(
        ["EdgeTpu: inference 17 done, dumping convert_scores (8136 bytes)"]
        + windbg_db(broken_scores, 0xFFFFB20C4A3C0000), start=1, pid=4)
    files["evidence/driver.log"] = [
        "ourdriver 0.3: open /dev/apex_0",
        "ourdriver 0.3: inference 17: input 307200 bytes, 2 outputs",
        fp_line("input", story["ours/input.bin"]),
        "ourdriver 0.3: inference 17: done in 4.1 ms",
        fp_line("convert_scores", ours_scores),
        fp_line("Squeeze1", story["ours/Squeeze1.bin"]),
    ]
    files["evidence/vendor.log"] = [  # a log in its own words: read with verify --pattern
        f"EdgeTpu: in crc {zlib.crc32(story['ours/input.bin']):08X} len {len(story['ours/input.bin'])}",
        f"EdgeTpu: out crc {zlib.crc32(broken_scores):08X} len {len(broken_scores)}",
    ]
    # WinDbg could not read one line of a 64-byte buffer (a page not present): `??` where the bytes would be
    unreadable = windbg_db(ours_scores[:64], WINDBG_BASE)
    unreadable[2] = unreadable[2][:19] + "?? ?? ?? ?? ?? ?? ?? ??-?? ?? ?? ?? ?? ?? ?? ??  ????????????????"
    files["evidence/windbg_unreadable.txt"] = [f"0: kd> db {WINDBG_BASE >> 32:08x}`{WINDBG_BASE & 0xFFFFFFFF:08x} L40",
                                               *unreadable]
    files["evidence/csr_libedgetpu.log"] = csr_libedgetpu()
    files["evidence/csr_driver.log"] = csr_driver()
    before, after = snapshots()
    files["evidence/csr_before.json"] = before.split("\n")
    files["evidence/csr_after.txt"] = after.split("\n")
    # Windows tools write CRLF; DbgView's saved logs and WinDbg pastes are kept so.
    crlf = {"evidence/windbg_db.txt", "evidence/windbg_unreadable.txt", "evidence/dbgview.log",
            "evidence/csr_driver.log", "evidence/vendor.log"}
    out = {rel: ("\r\n" if rel in crlf else "\n").join(lines).encode("ascii") + (b"\r\n" if rel in crlf else b"\n")
           for rel, lines in files.items()}
    out["evidence/convert_scores_alloc.bin"] = alloc(ours_scores)
    out.update(npu_driver_run(story))
    return out


def main(argv=None) -> int:
    return make_dumps.main(argv, build, __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
