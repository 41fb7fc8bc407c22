"""`python -m forensics`: the same entry point as the `forensics` console script."""

from forensics.cli import run

run()
