"""forensics: differential debugging of NPU output buffers, starting with the Google Coral Edge TPU.

The library is importable without the CLI: `forensics.compare.diff.diff_dumps`, `forensics.buffer.anchors.analyse_anchors`,
`forensics.compare.crc.crc_files` ... each return a frozen result object with `to_dict()`.
"""

__version__ = "0.2.0"
