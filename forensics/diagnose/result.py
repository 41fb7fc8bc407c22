"""The result of a diagnosis: the named findings (each with the share of the differing bytes it explains) and
the verdict that follows, with its exit code."""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.compare.crc import format_crc
from forensics.core import finding as core_finding
from forensics.core import serial
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict

VERDICTS = (Verdict.IDENTICAL, Verdict.WITHIN, Verdict.EXPLAINED, Verdict.PARTLY_EXPLAINED, Verdict.UNEXPLAINED)
EXIT_CODES = {v: v.exit_code for v in VERDICTS}  # forensics.core.verdict decides them


def with_command(hint: str, command: str) -> str:
    """`look at the differing records: forensics diff A B`: a hint and the command it asks for, in one sentence."""
    return f"{hint}: {command}" if command and hint else (command or hint)


def _hint_of(doc: dict) -> str:
    """The hint a document's `hint` holds beside its `command` (with_command read back)."""
    text, command = doc.get("hint") or "", doc.get("command") or ""
    if not command:
        return text
    return text[:-len(command) - 2] if text.endswith(f": {command}") else ("" if text == command else text)


def _hint_field():
    """A hint: written with the command it asks for (with_command), read back without it."""
    return serial.json(write=lambda r: with_command(r.hint, r.command), read=_hint_of)


@dataclass(frozen=True)
class Finding(core_finding.Finding, serial.Serial):
    """One named bug pattern, a forensics.core.finding.Finding: `kind` (one of KINDS), its `sentence` (the
    evidence), what to do (`hint`), its `facts` (structured details); `explains` is the share of the differing
    bytes its simulation reproduces. `evidence` and `details` are the names diagnose's callers and its JSON
    use for the sentence and the facts."""

    JSON_ORDER = ("kind", "evidence", "hint", "command", "explains")

    sentence: str = field(default="", metadata=serial.json(name="evidence"))
    hint: str = field(default="", metadata=_hint_field())
    # the kind's own keys, written beside the others
    facts: dict = field(default_factory=dict, compare=False, hash=False, metadata=serial.json(spread=True))
    explains: float = 0.0
    command: str = ""  # the command the hint asks to run, printed whole on its own line (the JSON's hint ends with it)

    @property
    def evidence(self) -> str:
        return self.sentence

    @property
    def details(self) -> dict:
        return self.facts

    def __getitem__(self, key):
        return self.to_dict()[key]

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    to_dict = serial.Serial.to_dict  # the fields' document (evidence, hint with its command, the facts spread)


@dataclass(frozen=True)
class DiagnoseResult(serial.Serial):
    JSON_DERIVED = ("exit_code", "identical")
    JSON_ORDER = ("verdict", "exit_code", "primary", "explained_fraction", "exact", "path_a", "path_b", "previous",
                  "size_a", "size_b", "crc32_a", "crc32_b", "identical", "record_size", "tolerance",
                  "records_compared", "records_differing", "bytes_differing", "first_differing_offset", "findings",
                  "residual", "characterization", "hint", "command", "dtype", "pad_only_bytes", "inputs",
                  "pad_bytes_differing", "pad_lanes")

    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int = field(metadata=serial.json(encode=format_crc, decode=lambda s: int(s, 16)))
    crc32_b: int = field(metadata=serial.json(encode=format_crc, decode=lambda s: int(s, 16)))
    record_size: int
    records_compared: int
    records_differing: int
    bytes_differing: int
    first_differing_offset: int | None
    findings: tuple[Finding, ...]
    previous: str | None = None
    verdict: Verdict = Verdict.IDENTICAL
    explained_fraction: float = 1.0
    residual: dict | None = None
    characterization: dict | None = None
    tolerance: int | None = None
    exact: bool = True
    hint: str = field(default="", metadata=_hint_field())
    primary: str | None = None  # the kind that explains the most
    dtype: str | None = None    # the elements' dtype the tolerance and value maps were judged in (None: bytes)
    pad_only_bytes: int = 0     # differing bytes in pad lanes only (ignored, as diff ignores them)
    inputs: dict | None = None  # the inputs' CRCs and whether they are equal, when given
    command: str = ""           # the command the hint asks to run (printed whole on its own line)
    pad_bytes_differing: int = 0  # differing bytes in the pad lanes (not counted in bytes_differing, as diff)
    pad_lanes: tuple[int, ...] = ()

    @property
    def identical(self) -> bool:
        """Byte-identical (pad lanes too)."""
        return self.size_a == self.size_b and self.bytes_differing == 0 and self.pad_bytes_differing == 0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.findings)

    @property
    def named(self) -> tuple[Finding, ...]:
        """The findings that name a bug (a head window is said beside them, never as the bug)."""
        return tuple(f for f in self.findings if f.kind != "head_window")

    @property
    def clean(self) -> bool:
        """No named bug pattern (identical, within tolerance, or unexplained: see `verdict`)."""
        return not self.findings

    def __bool__(self) -> bool:
        return self.passed

    def finding(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)


def percent(x: float) -> str:
    """A share as the report writes it: `12.5%`, `<0.1%`, `>99.9%`."""
    p = 100 * x
    if 0 < p < 0.1:
        return "<0.1%"
    if 99.9 < p < 100:
        return ">99.9%"
    return f"{p:.1f}%".replace(".0%", "%")


def judge_diagnose(result: DiagnoseResult) -> Judgement:
    """The one judgement of a diagnosis: its verdict (IDENTICAL / WITHIN TOLERANCE exit 0; EXPLAINED / PARTLY
    EXPLAINED / UNEXPLAINED exit 1), the headline naming what explains the differing bytes, and the clauses
    (pad lanes ignored, within tolerance, the primary kind, a head window)."""
    named = [f for f in result.findings if f.kind != "head_window"]
    counts: dict[str, int] = {}
    for f in named:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    kinds = ", ".join(kind if n == 1 else f"{n} {kind}s" for kind, n in counts.items())  # 2 shifts: two blocks
    verb = "explains" if len(named) == 1 else "explain"
    reasons = []
    if result.pad_bytes_differing:
        reasons.append(Reason("pad_lanes_ignored", f"{result.pad_bytes_differing:,} differing bytes in pad lanes "
                                                   f"{','.join(map(str, result.pad_lanes))} (not compared, as diff)"))
    if result.primary is not None:
        reasons.append(Reason("primary", result.primary))
    if result.finding("head_window") is not None:
        reasons.append(Reason("head_window", result.finding("head_window").evidence))
    verdict = result.verdict
    if verdict == Verdict.IDENTICAL:
        message = ("A and B are identical outside the pad lanes (pad lanes ignored, as diff ignores them)"
                   if result.pad_bytes_differing else "A and B are byte-identical")
    elif verdict == Verdict.WITHIN:
        unit = f"{result.dtype} element" if result.dtype else "byte"
        message = f"A and B differ by at most {result.tolerance} LSB per {unit}"
        reasons.append(Reason("within_tolerance", f"tolerance {result.tolerance} LSB"))
    elif verdict == Verdict.EXPLAINED:
        message = f"{kinds} {verb} the differing bytes"
    elif verdict == Verdict.PARTLY_EXPLAINED:
        message = f"{kinds} {verb} {percent(result.explained_fraction)} of the differing bytes"
    else:
        total = result.bytes_differing + abs(result.size_a - result.size_b)
        message = f"no known bug pattern explains these {total:,} differing bytes"
    return Judgement(verdict, message, tuple(reasons))
