"""Name the bring-up bug behind two differing dumps, or say plainly that no known pattern explains them.

One engine of hypotheses: every bug kind (one module under forensics/diagnose/kinds/) is a generator that predicts
B from A and the layout (the model's tensor shape and Edge TPU layer map when known, else the record size and
searches over sizes, pad lanes and sampled shift windows) and proposes its candidates. Each candidate is scored by
how many of the differing bytes its prediction reproduces (`explains`) and how many equal bytes it would have
changed; the most explaining, most specific candidate wins, and further candidates join while they explain what
is left (shift + fill). The verdict follows from the share explained: IDENTICAL, WITHIN TOLERANCE (exit 0),
EXPLAINED, PARTLY EXPLAINED, UNEXPLAINED (exit 1, with where the differences are and what they look like). A
differing pair never exits 0 without a tolerance.

Everything streams: one paired pass over both dumps (scan.py) in reused fixed-size buffers collects the CRCs,
the differing bytes, histograms and sentinel runs; candidates are then scored (scoring.py) on the whole pair when
it is at most EXACT_LIMIT bytes, else on SAMPLE_BLOCKS blocks spread over it and over its differing chunks (the
fractions are then estimates and `exact` is false), and chosen (select.py). Memory stays bounded for GiB dumps.
"""

from __future__ import annotations

from forensics.diagnose import kinds
from forensics.diagnose.engine import (DEFAULT_MAX_SHIFT, EXPLAINED_SHARE, MAX_CANDIDATES, WHOLE_SHIFT_SEARCH,
                                       diagnose_dumps)
from forensics.diagnose.kinds.head_window import DEFAULT_WINDOW
from forensics.diagnose.region import EXACT_LIMIT, LINE, PAGE, SAMPLE_BLOCK, SAMPLE_BLOCKS
from forensics.diagnose.result import EXIT_CODES, VERDICTS, DiagnoseResult, Finding
from forensics.diagnose.scan import DEFAULT_CHUNK, DEFAULT_MIN_RUN, SENTINELS
from forensics.diagnose.scoring import MAX_FALSE, MIN_SHARE

KINDS = kinds.names()  # every kind, most specific first

__all__ = ["DEFAULT_CHUNK", "DEFAULT_MAX_SHIFT", "DEFAULT_MIN_RUN", "DEFAULT_WINDOW", "EXACT_LIMIT", "EXIT_CODES",
           "EXPLAINED_SHARE", "KINDS", "LINE", "MAX_CANDIDATES", "MAX_FALSE", "MIN_SHARE", "PAGE", "SAMPLE_BLOCK",
           "SAMPLE_BLOCKS", "SENTINELS", "VERDICTS", "WHOLE_SHIFT_SEARCH", "DiagnoseResult", "Finding",
           "diagnose_dumps", "kinds"]
