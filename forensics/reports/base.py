"""The report every command returns, and the option helpers the report modules share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from forensics.core import exitcodes
from forensics.core.judgement import Judgement
from forensics.core.verdict import Verdict


@dataclass(frozen=True, repr=False)
class Report:
    """What one command found: its `--json` document, exit code, warnings and tables.

    A judging command gives its `verdict` (forensics.core.verdict.Verdict): the exit code then follows from it (the
    one place: Verdict.exit_code) and the document carries both `verdict` and `exit_code`."""

    command: str
    result: object                       # the library's result object (or document) the report is built on
    exit_code: int = exitcodes.SAME
    warnings: tuple[str, ...] = ()
    rows_key: str | None = field(default=None, repr=False)  # the document's list of rows, for to_frame()
    dumps: tuple = field(default=(), repr=False)  # the dumps read: a text dump or a slice is named in `sources`
    verdict: Verdict | None = field(default=None, kw_only=True)
    judgement: Judgement | None = field(default=None, kw_only=True)  # the result's one judgement, when it has one

    # The result type (a forensics.core.serial.Serial) the report is built on: a saved document of a report that
    # names one reads back (from_dict, forensics.reports.load) and renders again. Named "module:Class" so that
    # importing a report module loads no result module before a command runs (benchmarks/bench_startup.py).
    RESULT: ClassVar[type | str | None] = None

    def __post_init__(self):
        if self.judgement is not None:  # the verdict is the judgement's: never a second one beside it
            if self.verdict is not None and Verdict(self.verdict) is not self.judgement.verdict:
                raise ValueError(f"a {self.command} report given verdict {self.verdict} and a judgement of "
                                 f"{self.judgement.verdict}")
            object.__setattr__(self, "verdict", self.judgement.verdict)
        if self.verdict is not None:
            object.__setattr__(self, "verdict", Verdict(self.verdict))
            object.__setattr__(self, "exit_code", self.verdict.exit_code)

    def to_dict(self) -> dict:
        """The `--json` document (a fresh dict each call)."""
        return self._sources(self.result.to_dict())

    def _sources(self, doc: dict) -> dict:
        """The document with the dumps it read named, and the verdict and exit code of a judging command."""
        from forensics.io.dump import with_sources

        doc = with_sources(doc, *self.dumps)
        doc.setdefault("command", self.command)
        doc.setdefault("report", type(self).__name__)
        if self.verdict is not None:
            doc["verdict"] = self.verdict
            doc["exit_code"] = self.exit_code
        if self.judgement is not None:
            doc["message"] = self.judgement.message
            doc["reasons"] = [reason.to_dict() for reason in self.judgement.reasons]
        return doc

    @classmethod
    def from_dict(cls, doc: dict) -> "Report":
        """The report a saved `--json` document stands for (its result read back through RESULT.from_dict, its
        judgement as saved): it renders as the command printed it, less what only the files gave (pictures)."""
        if cls.RESULT is None:
            raise TypeError(f"a {cls.__name__} cannot be read back from its document")
        result_type = cls.result_type_of(doc)
        judgement, verdict = None, None
        if doc.get("verdict") is not None and "message" in doc:  # a judgement: its verdict, message and reasons
            from forensics.core.judgement import Reason

            judgement = Judgement(Verdict(doc["verdict"]), doc.get("message", ""),
                                  tuple(Reason(r.get("code", ""), r.get("text", ""), bool(r.get("worded")))
                                        for r in doc.get("reasons", ())))
        elif doc.get("verdict") is not None:  # a verdict alone (csr --name: FOUND / NOT FOUND)
            verdict = Verdict(doc["verdict"])
        return cls(doc.get("command", ""), result_type.from_dict(doc), warnings=tuple(doc.get("warnings", ())),
                   rows_key=cls.rows_key_of(doc), judgement=judgement, verdict=verdict)

    @classmethod
    def result_type(cls) -> type:
        """RESULT, imported when it is named "module:Class"."""
        if isinstance(cls.RESULT, str):
            import importlib

            module, _, name = cls.RESULT.partition(":")
            return getattr(importlib.import_module(module), name)
        return cls.RESULT

    @classmethod
    def result_type_of(cls, doc: dict) -> type:
        """The result type a saved document reads back as: RESULT (a report of several kinds of result tells
        them apart by the document's keys)."""
        return cls.result_type()

    ROWS_KEY: ClassVar[str | None] = None  # a report whose rows are always under one key names it here

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        """The document's list of rows (for to_frame()), as the report function sets it: ROWS_KEY, unless the
        kind of result decides it."""
        return cls.ROWS_KEY

    def renderables(self) -> list:
        """The rich renderables the command prints (without --json)."""
        raise NotImplementedError

    def __rich__(self):
        from rich.console import Group

        return Group(*self.renderables())

    def _repr_html_(self) -> str:
        from forensics.render.console import html_of

        return html_of(self.renderables())

    def to_frame(self):
        """The report's rows as a pandas DataFrame (pandas is imported here, only when asked for)."""
        if self.rows_key is None:
            raise TypeError(f"a {self.command} report has no rows to make a DataFrame of")
        try:
            import pandas as pd
        except ImportError:
            from forensics.core.errors import DependencyError

            raise DependencyError("to_frame() needs pandas: pip install 'npu-forensics[export]'") from None
        rows = self.to_dict().get(self.rows_key) or []
        return pd.DataFrame(rows)

    @property
    def passed(self) -> bool:
        """The command would exit 0: its verdict passed (MATCH, WITHIN TOLERANCE, IDENTICAL, ...), or, for a
        command that judges nothing, it did what it was asked."""
        return self.verdict.passed if self.verdict is not None else self.exit_code == exitcodes.SAME

    def __bool__(self) -> bool:
        """`passed`: `if reports.diff(a, b):` reads as "if they match"."""
        return self.passed

    def __repr__(self) -> str:  # short: notebooks show it as the plain-text form beside the HTML
        return f"<{type(self).__name__} {self.command}: exit_code={self.exit_code}>"


def _limit(limit, show_all: bool):
    return None if show_all else (None if limit == 0 else limit)


def spellings(*own: str, **grammars):
    """A report function whose keywords also take the command line's spellings (`pad="2,3"`, `limit="0x10"`):
    each keyword forensics.core.options.GRAMMARS knows is parsed (or refused with one InputError naming it) before
    the function runs; `grammars` gives a keyword the grammar this command reads it in, where it differs from
    GRAMMARS' (diagnose's repeated `sentinel`, compare's per-tensor `tolerance`); `own` names keywords the
    function parses itself (link's NAME=ADDR). A value the CLI's argument type read (Parsed) is not read again."""
    import functools

    def wrap(function):
        @functools.wraps(function)
        def report(*args, **kwargs):
            from forensics.core.options import Parsed, checked, parsed

            mine = {k: kwargs.pop(k) for k in own if k in kwargs}
            mine = {k: v.value if isinstance(v, Parsed) else v for k, v in mine.items()}  # the function parses
            read = {k: kwargs.pop(k) for k in grammars if k in kwargs}
            read = {k: v.value if isinstance(v, Parsed) else checked(k, grammars[k], v) for k, v in read.items()}
            return function(*args, **parsed(**kwargs), **mine, **read)

        return report

    return wrap
