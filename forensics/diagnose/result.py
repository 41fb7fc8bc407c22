"""The result of a diagnosis: the named findings (each with the share of the differing bytes it explains) and
the verdict that follows, with its exit code."""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.compare.crc import format_crc
from forensics.core.verdict import Verdict

VERDICTS = (Verdict.IDENTICAL, Verdict.WITHIN, Verdict.EXPLAINED, Verdict.PARTLY_EXPLAINED, Verdict.UNEXPLAINED)
EXIT_CODES = {v: v.exit_code for v in VERDICTS}  # forensics.core.verdict decides them


@dataclass(frozen=True)
class Finding:
    """One named bug pattern: `kind` (one of KINDS), the evidence sentence, what to do, structured details;
    `explains` is the share of the differing bytes its simulation reproduces."""

    kind: str
    evidence: str
    hint: str = ""
    details: dict = field(default_factory=dict, compare=False, hash=False)
    explains: float = 0.0

    def __getitem__(self, key):
        return self.to_dict()[key]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "evidence": self.evidence, "hint": self.hint, "explains": self.explains,
                **self.details}


@dataclass(frozen=True)
class DiagnoseResult:
    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int
    crc32_b: int
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
    hint: str = ""
    primary: str | None = None  # the kind that explains the most
    dtype: str | None = None    # the elements' dtype the tolerance and value maps were judged in (None: bytes)
    pad_only_bytes: int = 0     # differing bytes in pad lanes only (ignored, as diff ignores them)
    inputs: dict | None = None  # the inputs' CRCs and whether they are equal, when given

    @property
    def identical(self) -> bool:
        return self.size_a == self.size_b and self.bytes_differing == 0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.findings)

    @property
    def clean(self) -> bool:
        """No named bug pattern (identical, within tolerance, or unexplained: see `verdict`)."""
        return not self.findings

    def __bool__(self) -> bool:
        return self.exit_code == 0

    def finding(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict, "exit_code": self.exit_code, "primary": self.primary,
            "explained_fraction": self.explained_fraction, "exact": self.exact,
            "path_a": self.path_a, "path_b": self.path_b, "previous": self.previous,
            "size_a": self.size_a, "size_b": self.size_b,
            "crc32_a": format_crc(self.crc32_a), "crc32_b": format_crc(self.crc32_b),
            "identical": self.identical, "record_size": self.record_size, "tolerance": self.tolerance,
            "records_compared": self.records_compared, "records_differing": self.records_differing,
            "bytes_differing": self.bytes_differing, "first_differing_offset": self.first_differing_offset,
            "findings": [f.to_dict() for f in self.findings],
            "residual": self.residual, "characterization": self.characterization, "hint": self.hint,
            "dtype": self.dtype, "pad_only_bytes": self.pad_only_bytes, "inputs": self.inputs,
        }
