"""render.repeat lays out the facts the library hands it: `tolerance --json`'s flags, one a line, are the
result's tolerance_flags (forensics.runs.noise), never its joined line split again. A tensor name that holds
" --tolerance " split the old joined line in the wrong place."""

from __future__ import annotations

import io
import shlex
from types import SimpleNamespace

from forensics.core.judgement import Judgement
from forensics.core.verdict import Verdict
from forensics.render.console import Output
from forensics.render.repeat import render_tolerance
from forensics.runs.noise import SpreadResult


def _tensor(name: str, spec: str, exact: bool = False):
    stage, tensor = name.split(":", 1)
    return SimpleNamespace(stage=stage, tensor=tensor, name=name, label=name, spec=spec, exact=exact, passable=True,
                           reason="measured", max_abs=1.0, max_lsb=None, ulps=None, p99_abs=1.0, cosine=None,
                           to_dict=lambda: {"tensor": tensor})


NAMES = ("dequantized:boxes --tolerance x", "dequantized:scores", "raw:same")


def spread() -> SpreadResult:
    return SpreadResult(runs=("r1", "r2"), sources=("a", "b"),
                        tensors=(_tensor(NAMES[0], "0.5"), _tensor(NAMES[1], "2lsb"), _tensor(NAMES[2], "0", True)))


def test_the_flags_are_one_per_item_and_join_into_the_args():
    result = spread()
    assert result.tolerance_flags == ("--tolerance 'dequantized:boxes --tolerance x=0.5'",
                                      "--tolerance dequantized:scores=2lsb")  # the exact tensor needs none
    assert result.tolerance_args == " ".join(result.tolerance_flags)
    assert shlex.split(result.tolerance_args) == ["--tolerance", f"{NAMES[0]}=0.5", "--tolerance", f"{NAMES[1]}=2lsb"]
    doc = result.to_dict()
    assert doc["tolerance_flags"] == list(result.tolerance_flags) and doc["tolerance_args"] == result.tolerance_args


def test_the_terminal_prints_each_flag_on_its_own_line_as_a_shell_takes_them():
    result = spread()
    out = io.StringIO()
    Output(out, io.StringIO(), width=400, color=False).print(
        *render_tolerance(result, Judgement(Verdict.OK, "measured")))
    text = out.getvalue()
    block = text.split("compare takes (after RUN_A RUN_B):\n", 1)[1].split("\nOK | ", 1)[0]
    assert [line.rstrip(" \\") for line in block.splitlines()] == list(result.tolerance_flags)
    # a shell drops each backslash-newline: the block is the one command line
    assert shlex.split(block.replace("\\\n", "")) == shlex.split(result.tolerance_args)


def test_no_flags_no_block():
    result = SpreadResult(runs=("r1", "r2"), sources=("a", "b"), tensors=(_tensor(NAMES[2], "0", True),))
    assert result.tolerance_flags == () and result.tolerance_args == ""
    out = io.StringIO()
    Output(out, io.StringIO(), width=200, color=False).print(*render_tolerance(result, Judgement(Verdict.OK, "x")))
    assert "compare takes" not in out.getvalue()
