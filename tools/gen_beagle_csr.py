"""Regenerate forensics/data/beagle_csr.json (the Beagle register table) from libedgetpu's CSR header.

The table is facts: register names and BAR2 offsets from google-coral/libedgetpu
`driver/config/beagle/beagle_csr_offsets.h` (Apache License 2.0). Nothing of the header is copied
but those names and numbers; this script is our own reader of its `const XCsrOffsets kBeagleY = {...}`
initialisers, where every used field is written `0x486f0,  // NOLINT: hib_error_status` (the name
sometimes wrapped onto the next comment line) and unused ones `kCsrRegisterSpaceInvalidOffset`.

Usage (from a fetched mirror of the repository, or a plain copy of the header):
    python tools/gen_beagle_csr.py --git-dir /path/to/libedgetpu/.git [--commit HEAD]
    python tools/gen_beagle_csr.py --header beagle_csr_offsets.h --commit <sha>
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HEADER_PATH = "driver/config/beagle/beagle_csr_offsets.h"
REPOSITORY = "https://github.com/google-coral/libedgetpu"
OUT = Path(__file__).resolve().parent.parent / "forensics" / "data" / "beagle_csr.json"

# Register widths are not in the header. libedgetpu reaches the blocks below 0x40000 (CB bridge at
# 0x19000, OMC/ABM/efuse "apex" block and SCU at 0x1a000) only through Read32/Write32
# (driver/beagle/beagle_top_level_handler.cc, beagle_top_level_interrupt_manager.cc); everything
# else goes through the 64-bit Read/Write of KernelRegisters, which insists on 8-byte alignment.
WIDTH32_GROUPS = {"CbBridge", "Apex", "Scu"}
# The USB-only block (driver/config/beagle/beagle_csr_offsets.h: kBeagleUsb*, 0x4c000..0x4cfff).
USB_BLOCK = (0x4C000, 0x4D000)

STRUCT_RE = re.compile(r"^const\s+(\w+)CsrOffsets\s+kBeagle(\w+?)CsrOffsets\s*=\s*\{\s*$")
ENTRY_RE = re.compile(r"^\s*(0x[0-9a-fA-F]+)\s*,\s*//\s*NOLINT:\s*(\w*)\s*$")
CONTINUATION_RE = re.compile(r"^\s*//\s*(\w+)\s*$")


def parse_header(text: str) -> list[dict]:
    """Every (offset, name, group) the header assigns, in header order (duplicates kept)."""
    entries, group, pending = [], None, None
    for lineno, line in enumerate(text.splitlines(), 1):
        if group is None:
            match = STRUCT_RE.match(line)
            if match:
                group = match.group(2)
            continue
        if line.strip() == "};":
            if pending is not None:
                raise SystemExit(f"line {lineno}: offset {pending['offset']:#x} has no name")
            group = None
            continue
        if pending is not None:
            match = CONTINUATION_RE.match(line)
            if not match:
                raise SystemExit(f"line {lineno}: expected the wrapped name of {pending['offset']:#x}")
            pending["name"] = match.group(1)
            entries.append(pending)
            pending = None
            continue
        match = ENTRY_RE.match(line)
        if match:
            entry = {"offset": int(match.group(1), 16), "name": match.group(2), "group": group}
            if entry["name"]:
                entries.append(entry)
            else:
                pending = entry
    if not entries:
        raise SystemExit("no kBeagle*CsrOffsets initialisers found: is this beagle_csr_offsets.h?")
    return entries


def _group_rank(group: str) -> int:
    if group.startswith("Debug"):
        return 2
    if group.endswith(("Breakpoint", "Trace", "SyncFlag", "RegisterFile")):
        return 1
    return 0


def build_table(entries: list[dict]) -> list[dict]:
    """One row per distinct offset: first name and group in header order, every group that names it."""
    by_offset: dict[int, dict] = {}
    for entry in entries:
        row = by_offset.get(entry["offset"])
        if row is None:
            row = by_offset[entry["offset"]] = {
                "offset": entry["offset"], "name": entry["name"], "group": entry["group"],
                "groups": [], "aliases": [],
            }
        if entry["group"] not in row["groups"]:
            row["groups"].append(entry["group"])
        if entry["name"] != row["name"] and entry["name"] not in row["aliases"]:
            row["aliases"].append(entry["name"])
    table = []
    for offset in sorted(by_offset):
        row = by_offset[offset]
        # The header lists many registers twice: once in the functional block libedgetpu drives
        # (HibUser, InstructionQueue, ScalarCore ...) and again in a debug or breakpoint/trace view.
        # Name the register by the functional block; header order breaks ties.
        row["group"] = min(row["groups"], key=_group_rank)
        width = 32 if any(g in WIDTH32_GROUPS for g in row["groups"]) else 64
        table.append({
            "offset": f"0x{offset:05x}",
            "name": row["name"],
            "group": row["group"],
            "groups": row["groups"],
            "aliases": row["aliases"],
            "width": width,
            "usb_only": USB_BLOCK[0] <= offset < USB_BLOCK[1],
        })
    return table


def read_from_git(git_dir: str, commit: str) -> tuple[str, str]:
    sha = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", commit], check=True,
                         capture_output=True, text=True).stdout.strip()
    text = subprocess.run(["git", "--git-dir", git_dir, "show", f"{sha}:{HEADER_PATH}"], check=True,
                          capture_output=True, text=True).stdout
    return text, sha


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--git-dir", help="a libedgetpu git directory (a mirror from `fetch` works)")
    source.add_argument("--header", help="a copy of beagle_csr_offsets.h")
    parser.add_argument("--commit", default=None, help="commit of the header (default HEAD with --git-dir)")
    parser.add_argument("--out", default=str(OUT), help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    if args.git_dir:
        text, commit = read_from_git(args.git_dir, args.commit or "HEAD")
    else:
        if not args.commit:
            parser.error("--header needs --commit (the table records where it came from)")
        text, commit = Path(args.header).read_text(encoding="utf-8"), args.commit
    entries = parse_header(text)
    table = build_table(entries)
    document = {
        "chip": "beagle",
        "description": "Beagle (Apex) BAR2 CSR offsets named by libedgetpu",
        "source_repository": REPOSITORY,
        "source_path": HEADER_PATH,
        "source_commit": commit,
        "license": "Apache-2.0",
        "copyright": "Copyright 2019 Google LLC (the header); names and offsets are facts about the chip",
        "generated_by": "tools/gen_beagle_csr.py",
        "width_rule": "32-bit for the CbBridge, Apex (OMC/ABM) and Scu blocks (reached by Read32/Write32), "
                      "64-bit elsewhere",
        "pcie_windows": ["0x40000", "0x44000", "0x48000"],
        "pcie_window_size": "0x1000",
        "registers": table,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=out.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        # One register per line: reviewable diffs when libedgetpu changes.
        handle.write("{\n")
        for key, value in document.items():
            if key == "registers":
                continue
            handle.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        handle.write('  "registers": [\n')
        handle.write(",\n".join("    " + json.dumps(row) for row in table))
        handle.write("\n  ]\n}\n")
    os.replace(tmp, out)
    print(f"{out}: {len(table)} registers from {len(entries)} header entries "
          f"({HEADER_PATH} @ {commit[:12]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
