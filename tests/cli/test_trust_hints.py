"""No hint may lead to a false MATCH: every `forensics ...` command an answer suggests, and every slice it
suggests (`--length N`, `--offset N` added to the command that printed it), run as printed on the same pair,
does not exit 0 when the pair differs. Applied across a family of differing pairs built with numpy: a
truncated B, a truncated A, B with a tail difference, copies at an offset; with and without --deps."""

from __future__ import annotations

import io
import json
import re
import shlex

import numpy as np
import pytest

from forensics.cli import main

_COMMAND = re.compile(r"(?<![\w/.-])forensics\s+([a-z][a-z-]*\b[^\n;`)]*)")
_SLICE = re.compile(r"(--(?:length|offset|at|count)\s+(?:0x[0-9a-fA-F]+|\d[\d,]*))")


def suggested_commands(output: str, argv: list[str]) -> list[list[str]]:
    """The commands an answer suggests: whole `forensics CMD ...` commands (placeholders in CAPITALS left
    out: they are not meant to run as printed), and slice flags to add to the command that printed them."""
    flat = " ".join(output.split())
    found = []
    for m in (m for line in output.splitlines() for m in _COMMAND.finditer(line)):
        words = shlex.split(m.group(1).split(" / ")[0].strip().rstrip(".,:"))  # `forensics diff / forensics ...`
        if words and not any(w.isupper() and len(w) > 1 for w in words):
            found.append(words)
    for m in _SLICE.finditer(flat):
        flag, value = m.group(1).split()
        found.append([*argv, flag, value.replace(",", "")])
    return found


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--width", "200", "--no-color"], stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def _scores(n: int, rng) -> np.ndarray:
    rec = np.tile(np.uint8([0xFF, 0x00, 0x80, 0x80]), (n, 1))
    hits = rng.choice(n, 12, replace=False)
    rec[hits, 0] = rng.integers(0, 255, 12)
    rec[hits, 1] = 255 - rec[hits, 0]
    return rec.reshape(-1)


def family(rng):
    """(name, A bytes, B bytes): pairs that differ, each in a way a slice could hide."""
    a = _scores(2034, rng).tobytes()
    tail = bytearray(a)
    tail[-6:] = bytes(6)
    cases = [
        ("truncated B", a, a[:256]),
        ("truncated B mid-record", a, a[:1001]),
        ("truncated A", a[:256], a),
        ("truncated A, B longer", a[:4096], a),
        ("B with a tail difference", a, bytes(tail)),
        ("B copied 64 bytes later", a, bytes(64) + a[:-64]),
        ("B copied 64 bytes earlier", a, a[64:] + bytes(64)),
        ("B the same copy with a prefix", a, bytes(64) + a),
        ("B from offset 64, shorter", a, a[64:]),
    ]
    return cases


COMMANDS = [
    ["diff", "{a}", "{b}"],
    ["diff", "{a}", "{b}", "--deps", "dumps/face_ssd"],
    ["crc", "{a}", "{b}"],
    ["diagnose", "{a}", "{b}"],
    ["diagnose", "{a}", "{b}", "--record", "4", "--pad", "2,3"],
]


@pytest.mark.parametrize("case", range(9))
def test_no_suggested_command_exits_0_on_a_differing_pair(tmp_path, case):
    name, a, b = family(np.random.default_rng(24))[case]
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a)
    pb.write_bytes(b)
    tried = 0
    for template in COMMANDS:
        argv = [w.format(a=pa, b=pb) for w in template]
        code, text = run(argv)
        assert code != 0, (name, argv, text)
        for suggestion in suggested_commands(text, argv):
            tried += 1
            again, answer = run(suggestion)
            assert again != 0, (name, argv, "suggested", suggestion, answer)
    assert tried >= 0  # cases without any hint are fine: nothing to mislead with


def test_the_extractor_finds_what_hints_look_like():
    text = ("the first 1,032 bytes match; compare the tensor's bytes only with --length 1032)\n"
            "look at the differing records: forensics diff a.bin b.bin\n"
            "relayout first (forensics relayout RAW --model MODEL --layer L)")
    got = suggested_commands(text, ["diff", "x", "y"])
    assert ["diff", "a.bin", "b.bin"] in got and ["diff", "x", "y", "--length", "1032"] in got
    assert not any(words[0] == "relayout" for words in got)


def test_the_old_hint_would_have_been_caught(tmp_path):
    """The runner catches the issue's case: `--length 256` on a truncated B MATCHes."""
    a = _scores(2034, np.random.default_rng(1)).tobytes()
    (tmp_path / "a.bin").write_bytes(a)
    (tmp_path / "b.bin").write_bytes(a[:256])
    argv = ["diff", str(tmp_path / "a.bin"), str(tmp_path / "b.bin")]
    old_hint = "compare the tensor's bytes only with --length 256"
    (suggestion,) = suggested_commands(old_hint, argv)
    assert run(suggestion)[0] == 0


def test_a_real_allocation_hint_is_given_and_honest(tmp_path):
    """With --deps saying the tensor's size, a B that holds A (the whole tensor) at the start of a larger
    allocation gets the --length hint, and it compares exactly the tensor's bytes."""
    a = _scores(2034, np.random.default_rng(2)).tobytes()
    (tmp_path / "a.bin").write_bytes(a)
    (tmp_path / "b.bin").write_bytes(a + bytes(12288 - len(a)))
    argv = ["diff", str(tmp_path / "a.bin"), str(tmp_path / "b.bin"), "--deps", "dumps/face_ssd"]
    code, text = run(argv)
    assert code == 1 and "--length 8136" in text
    (suggestion,) = suggested_commands(text, argv)
    code, _ = run(suggestion + ["--json"])
    assert code == 0
    out = io.StringIO()
    main(suggestion + ["--json"], stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["size_a"] == json.loads(out.getvalue())["size_b"] == 8136
