"""The common output of every benchmark: rows of (figure, value, baseline, ratio, goal, met).

A benchmark script collects its figures with `Table.add` inside `with Table(args.json) as table:`. Its usual
text goes to stdout; with `--json` that text goes to stderr and stdout carries only the rows, one JSON list,
which `benchmarks/run_all.py` gathers into one table (and `tools/gen_readme_speed.py` into docs/speed.md).

A goal is either on the ratio to the baseline (`goal_ratio=1.0`: ours <= 1.0x the baseline) or on the value
itself (`goal_value=0.2`: ours <= 0.2 s), or a floor on the value (`goal_min=95`: ours >= 95, for shares and
rates, where more is better); a row without a goal is context (a bound, a baseline).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass


@dataclass
class Row:
    bench: str
    figure: str
    value: float
    unit: str
    baseline: str | None = None
    baseline_value: float | None = None
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None
    note: str | None = None

    @classmethod
    def from_dict(cls, data: dict) -> "Row":
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})


def make_row(bench: str, figure: str, value: float, unit: str = "s", *, baseline: str | None = None,
             baseline_value: float | None = None, goal_ratio: float | None = None,
             goal_value: float | None = None, goal_min: float | None = None, note: str | None = None) -> Row:
    ratio = value / baseline_value if baseline_value else None
    goal, met = None, None
    if goal_ratio is not None and ratio is not None:
        goal, met = f"<= {goal_ratio:g}x", ratio <= goal_ratio
    elif goal_value is not None:
        goal, met = f"<= {goal_value:g} {unit}", value <= goal_value
    elif goal_min is not None:
        goal, met = f">= {goal_min:g} {unit}", value >= goal_min
    return Row(bench, figure, value, unit, baseline, baseline_value, ratio, goal, met, note)


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s" and value < 1:
        return f"{value * 1e3:.1f} ms"
    if unit == "ms" and value < 1:
        return f"{value * 1e3:.0f} us"
    return f"{value:.3g} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def format_rows(rows: list[Row]) -> list[str]:
    """The rows as a plain-text table (the same columns as docs/speed.md's generated section)."""
    head = ("benchmark", "figure", "value", "baseline", "baseline value", "ratio", "goal", "met")
    cells = [head]
    for r in rows:
        cells.append((r.bench, r.figure, fmt_value(r.value, r.unit), r.baseline or "-",
                      fmt_value(r.baseline_value, r.unit) if r.baseline_value is not None else "-",
                      f"{r.ratio:.2f}x" if r.ratio is not None else "-", r.goal or "-",
                      {True: "yes", False: "NO", None: "-"}[r.met]))
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c[i].ljust(widths[i]) for i in range(len(head))).rstrip() for c in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


class Table:
    """Collects a benchmark's rows; with `as_json`, keeps stdout for the rows alone (text goes to stderr)."""

    def __init__(self, as_json: bool, bench: str | None = None):
        self.as_json = as_json
        self.bench = bench or sys.argv[0].rsplit("/", 1)[-1].removesuffix(".py")
        self.rows: list[Row] = []
        self._stdout = None

    def add(self, figure: str, value: float, unit: str = "s", **kwargs) -> Row:
        row = make_row(self.bench, figure, value, unit, **kwargs)
        self.rows.append(row)
        return row

    def __enter__(self) -> "Table":
        if self.as_json:
            self._stdout, sys.stdout = sys.stdout, sys.stderr
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if self.as_json:
            sys.stdout = self._stdout
            if exc is None:
                print(json.dumps([asdict(r) for r in self.rows]))
        elif exc is None and self.rows:
            print()
            print("\n".join(format_rows(self.rows)))


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print only the rows, as one JSON list (the text goes to stderr)")
