"""Legal device addresses for fixtures, laid out as a driver maps buffers: each page-aligned, or a 64-byte offset
into its first page (TFLite aligns tensors to 64 bytes, and a mapped host buffer keeps its offset in the page),
one after another with gaps, in the simple space (below 32 MiB) or libedgetpu's extended segment
(0x8000000000000000 + up to 4 GB). Every address is one the story's driver maps (driver.map_pages accepts its
page), so the layout is checked against the driver's own arithmetic, not forensics'."""

from __future__ import annotations

from tests.link import driver

SIMPLE_END = 1 << 25
EXTENDED_START, EXTENDED_END = 1 << 63, (1 << 63) + (1 << 32)


class Layout:
    """`next(size)`: the address of the next buffer of `size` bytes."""

    def __init__(self, rng, space: str = "extended", tensor_offsets: bool = True):
        self.rng, self.space, self.tensor_offsets = rng, space, tensor_offsets
        start, end = (0, SIMPLE_END) if space == "simple" else (EXTENDED_START, EXTENDED_END)
        span = (end - start) // driver.PAGE
        self.cursor = start + driver.PAGE * rng.randrange(0, span // 64)
        self.end = end

    def next(self, size: int) -> int:
        offset = 64 * self.rng.randrange(0, 64) if self.tensor_offsets and self.rng.random() < 0.5 else 0
        base = self.cursor
        driver.map_pages(base, offset + max(size, 1))  # the driver maps it (ValueError otherwise)
        self.cursor = base + driver.page_align_up(offset + max(size, 1)) + driver.PAGE * self.rng.randrange(0, 4)
        assert self.cursor <= self.end, "the fixture ran out of address space"
        return base + offset


def layer_addresses(exe, layout: Layout) -> tuple[dict, dict]:
    """({input name: [address per batch]}, {output name: [...]}) for every layer of `exe`."""
    inputs = {layer.name: [layout.next(layer.size_bytes) for _ in range(exe.batch_size)]
              for layer in exe.input_layers}
    outputs = {layer.name: [layout.next(layer.size_bytes) for _ in range(exe.batch_size)]
               for layer in exe.output_layers}
    return inputs, outputs
