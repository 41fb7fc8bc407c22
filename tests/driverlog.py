"""The real driver's lines for the tests: dumps/driver_printf.py (its format strings and arithmetic, no forensics)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dumps"))
try:
    import driver_printf as drv  # noqa: E402
finally:
    sys.path.pop(0)

__all__ = ["drv"]
