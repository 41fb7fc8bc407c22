"""Beagle register traces: the CSR table, trace/snapshot parsing, and trace comparison.

`beagle_table()` names offsets, `read_trace(path)` parses a file (formats detected line by line),
`compare_traces(a, b)` lines two traces up (or two snapshots by offset) into a `CsrComparison`;
`align(keys_a, keys_b)` (forensics.csr.align) is the sequence alignment under it.
"""

from forensics.csr.compare import CsrComparison, CsrRow, compare_files, compare_traces
from forensics.csr.parse import Access, Trace, parse_text, read_trace
from forensics.csr.registers import (
    Register,
    RegisterTable,
    beagle_table,
    in_pcie_window,
)

__all__ = [
    "Access", "CsrComparison", "CsrRow", "Register", "RegisterTable", "Trace", "beagle_table",
    "compare_files", "compare_traces", "in_pcie_window", "parse_text", "read_trace",
]
