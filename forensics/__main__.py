"""`python -m forensics`: the same entry point as the `forensics` console script."""

import sys

from forensics.cli import main

sys.exit(main())
