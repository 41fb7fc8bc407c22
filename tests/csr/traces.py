"""Register traces built from public facts: libedgetpu's PCIe open sequence and a driver's version.

The reference sequence follows libedgetpu's MmioDriver::DoOpen (driver/mmio_driver.cc) on PCIe, where
reset and clock gating go through the kernel driver and do not show as register accesses:
CheckHibError (read hib_error_status) -> dma_burst_limiter -> HostQueue::Open (read descriptor size;
queue base, status block base, size; control = enable|sb_wr_enable; poll status) -> RunController
(scalar core, avDataPop, parameterPop, infeed, outfeed run controls = 1; tileconfig0 = 0x7f broadcast,
poll it; tile op/narrowToWide/wideToNarrow run controls = 1) -> status_block_update = 0 -> interrupt
controls. Offsets are transcribed by hand from beagle_csr_offsets.h, independently of the packaged table.
"""

from __future__ import annotations

# (op, offset, value, width, reads) ; reads > 1 means a poll: that many reads, the last one `value`.
OPEN_SEQUENCE = [
    ("R", 0x486F0, 0x0, 64, 1),          # hib_error_status
    ("W", 0x487A8, 0x0, 64, 1),          # dma_burst_limiter (beagle axi_dma_burst_limiter = 0)
    ("R", 0x48578, 0x10, 64, 1),         # instruction_queue_descriptor_size
    ("W", 0x48590, 0x100000, 64, 1),     # instruction_queue_base
    ("W", 0x48598, 0x101000, 64, 1),     # instruction_queue_status_block_base
    ("W", 0x485A0, 0x100, 64, 1),        # instruction_queue_size
    ("W", 0x48568, 0x5, 64, 1),          # instruction_queue_control: enable | sb_wr_enable
    ("R", 0x48570, 0x1, 64, 3),          # instruction_queue_status polled until enabled
    ("W", 0x44018, 0x1, 64, 1),          # scalarCoreRunControl
    ("W", 0x44158, 0x1, 64, 1),          # avDataPopRunControl
    ("W", 0x44198, 0x1, 64, 1),          # parameterPopRunControl
    ("W", 0x441D8, 0x1, 64, 1),          # infeedRunControl
    ("W", 0x44218, 0x1, 64, 1),          # outfeedRunControl
    ("W", 0x48788, 0x7F, 64, 1),         # tileconfig0: broadcast to the 7-bit tile mask
    ("R", 0x48788, 0x7F, 64, 2),         # poll tileconfig0
    ("W", 0x400C0, 0x1, 64, 1),          # opRunControl
    ("W", 0x40150, 0x1, 64, 1),          # narrowToWideRunControl
    ("W", 0x40110, 0x1, 64, 1),          # wideToNarrowRunControl
    ("W", 0x486E8, 0x0, 64, 1),          # status_block_update
    ("W", 0x486A0, 0xF, 64, 1),          # sc_host_int_control
    ("W", 0x485C0, 0x1, 64, 1),          # instruction_queue_int_control
    ("W", 0x486C0, 0x1, 64, 1),          # fatal_err_int_control
]
NAMES = {
    0x486F0: "hib_error_status", 0x487A8: "dma_burst_limiter", 0x48578: "instruction_queue_descriptor_size",
    0x48590: "instruction_queue_base", 0x48598: "instruction_queue_status_block_base",
    0x485A0: "instruction_queue_size", 0x48568: "instruction_queue_control", 0x48570: "instruction_queue_status",
    0x44018: "scalarCoreRunControl", 0x44158: "avDataPopRunControl", 0x44198: "parameterPopRunControl",
    0x441D8: "infeedRunControl", 0x44218: "outfeedRunControl", 0x48788: "tileconfig0",
    0x400C0: "opRunControl", 0x40150: "narrowToWideRunControl", 0x40110: "wideToNarrowRunControl",
    0x486E8: "status_block_update", 0x486A0: "sc_host_int_control", 0x485C0: "instruction_queue_int_control",
    0x486C0: "fatal_err_int_control",
}


def vlog_line(op: str, offset: int, value: int, width: int, glog: bool, n: int) -> str:
    """One libedgetpu KernelRegisters VLOG(5) line (kernel_registers.cc), plain or glog prefix."""
    prefix = (f"I0413 08:35:26.{202084 + n:06d}  4793 kernel_registers.cc:{190 if op == 'W' else 211}] "
              if glog else f"I driver/kernel/kernel_registers.cc:{190 if op == 'W' else 211}] ")
    val = f"{value:08x}" if width == 32 else f"{value:016x}"
    if op == "W":
        return f"{prefix}Write: offset = 0x{offset:016x}, value = 0x{val}"
    return f"{prefix}Read: offset = 0x{offset:016x}, value: = 0x{val}"


def libedgetpu_open_trace() -> str:
    lines = ["I driver/beagle/beagle_pci_driver_provider.cc:88] Opening device at /dev/apex_0"]
    n = 0
    for op, offset, value, width, reads in OPEN_SEQUENCE:
        for r in range(reads):
            # A poll reads the old value until the last read sees the expected one.
            v = value if r == reads - 1 else 0
            lines.append(vlog_line(op, offset, v, width, glog=n % 2 == 1, n=n))
            n += 1
    lines.append("I driver/mmio_driver.cc:361] Device opened.")
    return "\n".join(lines) + "\n"


def driver_open_trace() -> str:
    """The same sequence as a Windows driver logs it, in the driver formats, one mismatch of each kind:
    value (instruction_queue_size 0x80 for 0x100), width (tileconfig0 written as an explicit W32 access),
    only_a (no status_block_update), only_b (an extra fatal_err_int_control write to the typo'd,
    UNKNOWN offset 0x486c4). It reads instruction_queue_status once instead of polling and does not
    poll tileconfig0 (visible with --reads only). Its `[CSR@tag]` writes carry the W word: without one a
    `[CSR@tag]` line is a value read (the real driver's register dump).
    """
    return "\n".join([
        "apex: probe ok, BAR2 mapped",
        "[INIT][Hib] hib_error_status @0x486f0 read=0x0",
        "[CSR@open] W dma_burst_limiter @0x487a8 = 0x0000000000000000",
        "R64 0x48578 = 0x10",
        "[CSR@queue] W off=0x48590 val=0x0000000000100000",
        "[CSR@queue] W off=0x48598 val=0x0000000000101000",
        "[CSR@queue] W instruction_queue_size @0x485a0 = 0x0000000000000080",
        "W64 0x48568 = 0x5",
        "[CSR@queue] R off=0x48570 val=0x0000000000000001",
        "[INIT][RunCtrl] scalarCoreRunControl @0x44018 write=0x1",
        "[INIT][RunCtrl] avDataPopRunControl @0x44158 write=0x1",
        "[INIT][RunCtrl] parameterPopRunControl @0x44198 write=0x1",
        "[INIT][RunCtrl] infeedRunControl @0x441d8 write=0x1",
        "[INIT][RunCtrl] outfeedRunControl @0x44218 write=0x1",
        "[CSR@tile] W32 tileconfig0 @0x48788 = 0x0000007f",   # explicit: the table says 64-bit
        "W 0x400c0 0x1",
        "W 0x40150 0x1",
        "W 0x40110 0x1",
        "debug: status block update left enabled",
        "[CSR@irq] W sc_host_int_control @0x486a0 = 0x000000000000000f",
        "[CSR@irq] W instruction_queue_int_control @0x485c0 = 0x0000000000000001",
        "[CSR@irq] W fatal_err_int_control @0x486c0 = 0x0000000000000001",
        "[CSR@irq] W fatal_err_int_control @0x486c4 = 0x0000000000000001",
        "apex: open done",
    ]) + "\n"


