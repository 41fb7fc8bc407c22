"""One buffer's analyses: the dominant record, coverage of a sentinel, hexdump, heat, a driver's fingerprint."""
