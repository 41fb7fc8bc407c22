"""How a link address is written: more than 32 bits -> all 16 hex digits (the story's 0x0200000000022000, so a
reader counts bit 57 where it is); a simple address as short as it is."""

from forensics.link.address import hex_address


def test_a_wide_address_keeps_its_16_digits_and_reads_back():
    for value in (0x0200000000022000, 0x8000000000880000, 0x100000000):
        text = hex_address(value)
        assert len(text) == 18 and int(text, 16) == value


def test_a_32_bit_address_is_written_as_it_is():
    for value in (0, 0x22000, 0xFFFFFFFF):
        assert hex_address(value) == hex(value)
