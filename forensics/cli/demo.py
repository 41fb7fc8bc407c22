"""CLI for `forensics demo`: the story on the dumps that ship with forensics (-> forensics.reports.demo)."""

from __future__ import annotations


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "demo", parents=parents, help="the story on the bundled dumps, step by step (no bash needed)",
        description="Runs crc, diff, anchors, decode, coverage and diagnose on the dumps that ship with forensics "
                    "(libedgetpu/, ours/ and broken/ as in the repository's dumps/, installed with the package), "
                    "from any directory, and says what each step shows. Exit 0 when every step ends as the story "
                    "expects.")
    p.add_argument("--dumps", default=None, metavar="DIR",
                   help="run the story on this copy of dumps/ instead (e.g. a clone's: forensics demo --dumps dumps)")
