"""Two buffers side by side: CRC32 of dumps, paired streaming of two dumps, the record diff, error statistics."""
