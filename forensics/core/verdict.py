"""The one vocabulary of verdicts every command, run, batch row and renderer uses, and its exit codes.

A verdict is a `str` (StrEnum): its value is the word the `--json` documents and the verdict lines have always
carried (`MATCH`, `WITHIN TOLERANCE`, ...), so a document compared with a plain string still reads the same.
The exit code of a command follows from its verdict here and nowhere else (cmp/diff's convention:
forensics.core.exitcodes).
"""

from __future__ import annotations

try:
    from enum import StrEnum
except ImportError:  # Python 3.10: enum.StrEnum came in 3.11
    from enum import Enum

    class StrEnum(str, Enum):
        """A str whose str() and format() are its value, as Python 3.11's enum.StrEnum."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)

from forensics.core import exitcodes


class Verdict(StrEnum):
    """What a judging command concluded. Grouped by the commands that say them; the exit code is `exit_code`."""

    # a pair of buffers or runs (diff, compare, crc, verify, decode --replay, anchors-gen --check-*): equal,
    # close, not
    MATCH = "MATCH"
    WITHIN = "WITHIN TOLERANCE"
    DIFFER = "DIFFER"
    MISMATCH = "MISMATCH"        # decode --replay: the official kernel's detections are not ours
    TRUNCATED = "TRUNCATED"      # verify: a logged line or byte run cut short (DbgPrint's limit, a paste)
    HEAD_WINDOW = "HEAD WINDOW"  # a dump shorter than the model tensor it stands for: only its head was judged
    # one buffer (anchors, coverage, crc of one file): fine, shown without judging, or look here
    OK = "OK"
    NONUNIFORM = "NONUNIFORM"    # anchors: records depart from the dominant one (listed, not judged: exit 0)
    WARNING = "WARNING"          # coverage: ranges still hold the sentinel; renderers' note lines ("look here")
    FOUND = "FOUND"              # csr --name / --find: registers matched
    NOT_FOUND = "NOT FOUND"
    # diagnose
    IDENTICAL = "IDENTICAL"
    EXPLAINED = "EXPLAINED"
    PARTLY_EXPLAINED = "PARTLY EXPLAINED"
    UNEXPLAINED = "UNEXPLAINED"
    # csr: two register traces
    PASSED = "PASSED"
    FAILED = "FAILED"
    # a stage of a run or a batch row: a buffer one run lacks, a pair that could not be read
    MISSING = "MISSING"
    ERROR = "ERROR"
    # link --check: a bitstream of this model linked right, linked wrong, or none of its bytes (a parameter
    # buffer is MATCH / DIFFER)
    LINKED = "LINKED"
    MISLINKED = "MISLINKED"
    FOREIGN = "FOREIGN"

    @property
    def exit_code(self) -> int:
        """The process's exit status for this verdict (the one place it is decided)."""
        return _EXIT_CODES[self]

    @property
    def passed(self) -> bool:
        """Whether a command with this verdict exits 0."""
        return self.exit_code == exitcodes.SAME

    @classmethod
    def of(cls, passed: bool, *, same: "Verdict | None" = None, differ: "Verdict | None" = None) -> "Verdict":
        """MATCH (or `same`) when `passed`, else DIFFER (or `differ`)."""
        return (same or cls.MATCH) if passed else (differ or cls.DIFFER)


_EXIT_CODES = {
    Verdict.MATCH: exitcodes.SAME, Verdict.WITHIN: exitcodes.SAME, Verdict.DIFFER: exitcodes.DIFFERENT,
    Verdict.MISMATCH: exitcodes.DIFFERENT, Verdict.TRUNCATED: exitcodes.DIFFERENT,
    Verdict.HEAD_WINDOW: exitcodes.DIFFERENT,
    Verdict.OK: exitcodes.SAME, Verdict.NONUNIFORM: exitcodes.SAME, Verdict.WARNING: exitcodes.DIFFERENT,
    Verdict.FOUND: exitcodes.SAME, Verdict.NOT_FOUND: exitcodes.DIFFERENT,
    Verdict.IDENTICAL: exitcodes.SAME, Verdict.EXPLAINED: exitcodes.DIFFERENT,
    Verdict.PARTLY_EXPLAINED: exitcodes.DIFFERENT, Verdict.UNEXPLAINED: exitcodes.DIFFERENT,
    Verdict.PASSED: exitcodes.SAME, Verdict.FAILED: exitcodes.DIFFERENT,
    Verdict.MISSING: exitcodes.DIFFERENT, Verdict.ERROR: exitcodes.ERROR,
    Verdict.LINKED: exitcodes.SAME, Verdict.MISLINKED: exitcodes.DIFFERENT, Verdict.FOREIGN: exitcodes.DIFFERENT,
}

# The stage verdicts of a compare / batch row, in the order the summaries count them.
STAGE_VERDICTS = (Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER)


def stage_verdict(status: str) -> Verdict | None:
    """One stage row's status as a verdict: MATCH / WITHIN TOLERANCE / DIFFER (a MISSING buffer counts as
    DIFFER, as in the batch table); None for a buffer present in one run only (not compared)."""
    if status in (Verdict.MATCH, Verdict.WITHIN):
        return Verdict(status)
    if status in (Verdict.DIFFER, Verdict.MISSING):
        return Verdict.DIFFER
    return None


def combined(statuses) -> str:
    """The statuses of one stage's buffers as one: MATCH when all match, DIFFER when one differs or is missing,
    WITHIN TOLERANCE when all pass; else the first status (a buffer in one run only: ONLY_A / ONLY_B)."""
    statuses = list(statuses)
    if all(s == Verdict.MATCH for s in statuses):
        return Verdict.MATCH
    if any(s in (Verdict.DIFFER, Verdict.MISSING) for s in statuses):
        return Verdict.DIFFER
    if all(s in (Verdict.MATCH, Verdict.WITHIN) for s in statuses):
        return Verdict.WITHIN
    return statuses[0]


def overall(verdicts) -> Verdict:
    """Many pairs' verdicts as one (a batch): ERROR when none could be judged (or there are none), MATCH when all
    match, WITHIN TOLERANCE when all pass, else DIFFER."""
    verdicts = [Verdict(v) for v in verdicts]
    if all(v is Verdict.ERROR for v in verdicts):
        return Verdict.ERROR
    if all(v is Verdict.MATCH for v in verdicts):
        return Verdict.MATCH
    if all(v.passed for v in verdicts):
        return Verdict.WITHIN
    return Verdict.DIFFER
