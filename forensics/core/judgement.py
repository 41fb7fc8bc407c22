"""One judgement per result: the verdict, the reasons that led to it and the one-line message, made once.

Each result type gets its judgement from one pure function beside it (`judge_diff(result) -> Judgement`); the
report carries it and every face (terminal, `--json`, `--html`, `--junit`, notebook) prints it as it is, never
choosing a verdict of its own (Polygraphy: each output's `passed` feeds the one `PASSED | ...` line). Clauses
that qualify a verdict (only pad lanes differ, a head window, a tolerance, a file changed after capture) are
reasons: facts with a stable code that scripts read from the JSON, and whose wording lives with the message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core import serial
from forensics.core.verdict import Verdict


@dataclass(frozen=True)
class Reason(serial.Serial):
    """One clause of a judgement: a stable `code` (snake_case, for scripts) and what it says in words."""

    code: str
    text: str = ""
    # the judgement's message already says this clause: faces print it there only (written only when it does)
    worded: bool = field(default=False, metadata=serial.json(omit=lambda worded: not worded))


@dataclass(frozen=True)
class Judgement:
    """What a result concluded: `verdict` (its exit code follows), `message` (the words after `VERDICT | `),
    `reasons` (the clauses, in the order they decided)."""

    verdict: Verdict
    message: str = ""
    reasons: tuple[Reason, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "verdict", Verdict(self.verdict))
        object.__setattr__(self, "reasons", tuple(self.reasons))

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def has(self, code: str) -> bool:
        """Whether one of the reasons has this code."""
        return any(reason.code == code for reason in self.reasons)

    @property
    def line(self) -> str:
        """`VERDICT | message`: the one verdict line every face prints."""
        return f"{self.verdict} | {self.message}" if self.message else str(self.verdict)

    def to_dict(self) -> dict:
        """The judgement's fields as the `--json` documents carry them beside the result's facts."""
        return {"verdict": self.verdict, "exit_code": self.exit_code, "message": self.message,
                "reasons": [reason.to_dict() for reason in self.reasons]}
