"""The library takes the command line's spellings: for every report function and every typed option of its
command, `reports.<cmd>(..., option="TEXT")` is what `forensics <cmd> ... --option TEXT` prints, and what the
typed value gives; a bad spelling is one InputError naming the parameter (issue 24 item 10)."""

from __future__ import annotations

import json
import shutil

import pytest

from forensics import reports

from forensics.core import options
from forensics.cli import build_parser
from forensics.core.errors import InputError
from forensics.core.verdict import Verdict
from forensics.render.console import to_json
from tests.conftest import run_cli

LIB, OURS, BROKEN = "dumps/libedgetpu", "dumps/ours", "dumps/broken"
SCORES_A, SCORES_B = f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"
TRACE = "W 0x48788 0x7f\nW 0x48790 0x1\nR 0x486f0 0x0\n"


def _log(tmp_path):
    log = tmp_path / "driver.log"
    if not log.exists():
        log.write_text(run_cli("fingerprint", f"{OURS}/input.bin", "--tag", "input").out)
    return log


def _traces(tmp_path):
    a, b = tmp_path / "a.trace", tmp_path / "b.trace"
    a.write_text(TRACE)
    b.write_text(TRACE.replace("0x1\n", "0x3\n"))
    return a, b


def _runs(tmp_path, first="input", name="run"):
    out = []
    for source in ("libedgetpu", "broken"):
        path = tmp_path / f"{name}-{source}"
        if not path.exists():
            buffers = {"input": f"input=dumps/{source}/input.bin",
                       "boxes": f"tensor:Squeeze1=dumps/{source}/Squeeze1.bin"}
            reports.ingest(path, [buffers[first], f"raw:convert_scores=dumps/{source}/convert_scores.bin"],
                           source=source)
        out.append(path)
    return out


def _ssd_runs(tmp_path):
    return _runs(tmp_path, "boxes", "ssd")


# command -> (positional argv and fixed flags for the CLI, the report call with the same fixed options)
BASE = {
    "crc": (lambda t: [f"{LIB}/input.bin", f"{BROKEN}/input.bin"],
            lambda t, **kw: reports.crc(f"{LIB}/input.bin", f"{BROKEN}/input.bin", **kw)),
    "diff": (lambda t: [SCORES_A, SCORES_B], lambda t, **kw: reports.diff(SCORES_A, SCORES_B, **kw)),
    "anchors": (lambda t: [SCORES_B, "--nonuniform"],
                lambda t, **kw: reports.anchors(SCORES_B, nonuniform=True, **kw)),
    "coverage": (lambda t: [SCORES_B, "--sentinel", "cc"],
                 lambda t, **kw: reports.coverage(SCORES_B, **{"sentinel": b"\xcc", **kw})),
    "hexdump": (lambda t: [SCORES_A, SCORES_B], lambda t, **kw: reports.hexdump(SCORES_A, SCORES_B, **kw)),
    "decode": (lambda t: ["--deps", "dumps/face_ssd", f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin"],
               lambda t, **kw: reports.decode(f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin",
                                              deps="dumps/face_ssd", **kw)),
    "anchors-gen": (lambda t: ["--check-deps", "dumps/face_ssd"],
                    lambda t, **kw: reports.anchors_gen(check_deps="dumps/face_ssd", **kw)),
    "diagnose": (lambda t: [SCORES_A, SCORES_B], lambda t, **kw: reports.diagnose(SCORES_A, SCORES_B, **kw)),
    "csr": (lambda t: [*_traces(t)], lambda t, **kw: reports.csr(*_traces(t), **kw)),
    "fingerprint": (lambda t: [f"{OURS}/input.bin"], lambda t, **kw: reports.fingerprint(f"{OURS}/input.bin", **kw)),
    "verify": (lambda t: [_log(t), f"{BROKEN}/input.bin"],
               lambda t, **kw: reports.verify(_log(t), f"{BROKEN}/input.bin", **kw)),
    "compare": (lambda t: [*_runs(t)], lambda t, **kw: reports.compare(*_runs(t), **kw)),
    "impact": (lambda t: [*_ssd_runs(t), "--deps", "dumps/face_ssd"],
               lambda t, **kw: reports.impact(*_ssd_runs(t), deps="dumps/face_ssd", **kw)),
    # commands that write: the same output path each time, removed before each call (RESET)
    "ingest": (lambda t: [t / "run", f"raw:convert_scores={SCORES_A}", "--source", "ours"],
               lambda t, **kw: reports.ingest(t / "run", [f"raw:convert_scores={SCORES_A}"], source="ours", **kw)),
    "import": (lambda t: ["dumps/evidence/windbg_db.txt", "-o", t / "out.bin"],
               lambda t, **kw: reports.import_("dumps/evidence/windbg_db.txt", output=t / "out.bin", **kw)),
}
RESET = {"ingest": lambda t: shutil.rmtree(t / "run", ignore_errors=True),
         "import": lambda t: (t / "out.bin").unlink(missing_ok=True)}

# A valid spelling of each typed option (the CLI's), by command where one command needs another.
SAMPLES = {
    "record": "4", "offset": "0x10", "count": "0x100", "fields": "background,face,pad,pad", "pad": "2,3",
    "scale": "1/256", "zero_point": "0", "tolerance": "1", "limit": "0x3", "lane": "1", "length": "0x400",
    "gap_fill": "0", "top": "3", "window": "0x40", "sentinel": "cc", "min_run": "4", "chunk": "960",
    "expect": "0x12345678", "anchor": "0x10", "context": "2", "at": "0x100", "max_shift": "0x100",
    "page": "0x1000", "image_size": "640x480", "input_size": "320x320", "names": "libedgetpu,ours",
    "score_threshold": "1/2", "min_scale": "0.2", "max_scale": "19/20", "feature_maps": "20,10,5,3,2,1",
    "aspect_ratios": "1,2,1/2,3,1/3", "interpolated_scale_aspect_ratio": "1", "show": "3", "workers": "1",
    "mask": "0x48790=0xff", "buffer": "input=dumps/ours/input.bin", "stall_timeout": "30",
    "max_decodes": "0x40",
}
BY_COMMAND = {("fingerprint", "offset"): "0x0", ("verify", "offset"): "0",
              ("compare", "tolerance"): "convert_scores=2lsb", ("decode", "offset"): "0", ("decode", "length"): "0x1fc8", ("anchors-gen", "input_size"): "320x320"}
# Bad spellings of each grammar: the CLI exits 2 naming the flag; the library raises one InputError naming it.
BAD = {options.names: ",,", options.lanes: "x", options.scale: "1/0", options.zero_point: "1.5",
       options.hex_bytes: "zz", options.crc32: "0xfffffffff", options.size: "640by480", options.two_names: "a",
       options.positive_ints: "0,1", options.numbers: "one", options.number: "nan", options.register_mask: "=1",
       options.tag_is_file: "input"}
# The typed options these tests do not feed, and why.
NOT_FED = {("decode", "top_k"): "classifier mode needs a classifier model the repository does not ship",
           ("impact", "top_k"): "classifier mode needs a classifier model the repository does not ship"}


def _typed_options():
    """(command, dest, flag, argparse type) for every option whose type is the library's grammar."""
    sub = build_parser()._subparsers._group_actions[0]
    out = []
    for command in sorted(BASE):
        for action in sub.choices[command]._actions:
            if not action.option_strings or action.type is None or action.dest == "width":
                continue
            out.append((command, action.dest, action.option_strings[-1], action.type))
    return out


TYPED = _typed_options()


def test_every_typed_option_of_these_commands_is_fed():
    # A new typed flag on one of these commands needs a sample spelling here (or a reason in NOT_FED).
    missing = [(c, d) for c, d, _, _ in TYPED
               if (c, d) not in NOT_FED and (c, d) not in BY_COMMAND and d not in SAMPLES]
    assert missing == []
    # ... and a grammar the library parses it with (a keyword the report takes in the CLI's spelling).
    assert [(c, d) for c, d, _, _ in TYPED if d not in options.GRAMMARS and (c, d) not in BY_COMMAND] == []


def _doc(report) -> dict:
    return json.loads(to_json(report.to_dict()))


def _call(make, tmp_path, **kw):
    try:
        return make(tmp_path, **kw), None
    except InputError as exc:
        return None, exc


@pytest.mark.parametrize("command,dest,flag,kind", [t for t in TYPED if t[:2] not in NOT_FED],
                         ids=[f"{c}-{d}" for c, d, _, _ in TYPED if (c, d) not in NOT_FED])
def test_the_library_takes_the_cli_spelling(command, dest, flag, kind, tmp_path):
    argv, make = BASE[command]
    reset = RESET.get(command, lambda t: None)
    sample = BY_COMMAND.get((command, dest), SAMPLES.get(dest))
    cli = run_cli(command, *argv(tmp_path), flag, sample, "--json")
    value = [sample] if dest in ("mask", "buffer") or (command, dest) == ("compare", "tolerance") else sample
    reset(tmp_path)
    spelled, error = _call(make, tmp_path, **{dest: value})
    if cli.code == 2:  # the combination is refused: the library refuses it too
        assert error is not None and spelled is None, (cli.err, spelled)
        return
    assert error is None, (cli.code, error)
    assert _doc(spelled) == json.loads(cli.out) and spelled.exit_code == cli.code
    # the typed value (what the CLI's type makes of the text) gives the same report
    typed_value = kind(sample)
    reset(tmp_path)
    typed, _ = _call(make, tmp_path, **{dest: [typed_value] if isinstance(value, list) else typed_value})
    assert typed is not None and _doc(typed) == _doc(spelled)


@pytest.mark.parametrize("command,dest,flag,kind", [t for t in TYPED if t[:2] not in NOT_FED
                                                    and t[1] in options.GRAMMARS],
                         ids=[f"{c}-{d}" for c, d, _, _ in TYPED if (c, d) not in NOT_FED and d in options.GRAMMARS])
def test_a_bad_spelling_is_one_error_naming_the_parameter(command, dest, flag, kind, tmp_path):
    argv, make = BASE[command]
    grammar = options.GRAMMARS[dest]
    bad = BAD.get(getattr(grammar, "item", grammar), "zz")
    cli = run_cli(command, *argv(tmp_path), flag, bad)
    RESET.get(command, lambda t: None)(tmp_path)
    assert cli.code == 2 and flag in cli.err and len(cli.err.strip().splitlines()) == 1, cli.err
    _, error = _call(make, tmp_path, **{dest: bad})
    assert error is not None and str(error).startswith(f"{dest}: "), error
    assert error.worded(lambda name, metavar="": "--" + name.replace("_", "-")).startswith(
        "--" + dest.replace("_", "-") + ": ")


def test_issue_24_item_10():
    # The cases the issue names: a 23-byte record from a string of names, TypeErrors from "2,3" and "1/256".
    report = reports.diff(SCORES_A, SCORES_B, fields="background,face,pad,pad", pad="2,3", scale="1/256",
                          zero_point="0")
    cli = run_cli("diff", SCORES_A, SCORES_B, "--fields", "background,face,pad,pad", "--pad", "2,3",
                  "--scale", "1/256", "--zero-point", "0", "--json")
    assert _doc(report) == json.loads(cli.out) and report.to_dict()["record_size"] == 4
    assert report.to_dict()["pad_lanes"] == [2, 3]
    for keyword, value, form in (("pad", 2, "lane numbers like 2,3"), ("scale", [1], "not a number"),
                                 ("fields", 7, "names like bg,face,pad,pad"), ("record", "four", "not an integer")):
        with pytest.raises(InputError) as caught:
            reports.diff(SCORES_A, SCORES_B, **{keyword: value})
        assert str(caught.value).startswith(f"{keyword}: ") and form in str(caught.value)


def test_option_groups_parse_once():
    layout = options.Layout.parse(record="0x8", fields="a,b,c,d,e,f,g,h", pad="6,7", scale="1/128",
                                  zero_point="-3")
    assert layout == options.Layout(record=8, fields=tuple("abcdefgh"), pad=(6, 7), scale=1 / 128, zero_point=-3)
    assert options.Layout.parse(**layout.keywords()) == layout  # typed values pass unchanged
    where = options.Slice.parse(offset="0x1000", length="4096", gap_fill="0xcc")
    assert where.dump_options() == {"offset": 4096, "length": 4096, "gap_fill": 0xCC}
    assert options.Slice.parse(offset="16").split() == ({}, 16)  # alone, a record command's layout offset
    policy = options.Tolerances.parse(atol="2lsb", rtol="0.01", check="p99").policy().default
    assert (policy.atol, policy.lsb, policy.rtol, policy.check) == (2.0, True, 0.01, "p99")
    assert options.Tolerances.parse(atol=0.5).policy().default.lsb is False
    with pytest.raises(InputError, match="^tolerance: must not be negative"):
        options.Tolerances.parse(tolerance="-1")
    assert options.ModelContext.parse(deps="dumps/face_ssd").given


def test_library_and_cli_share_one_hex_grammar():
    from forensics.cli.args import crc_value, hex_pattern

    for text in ("cc", "0xCC", "de ad be ef", "DE_AD"):
        assert hex_pattern(text) == options.hex_bytes(text) == bytes.fromhex(options.hex_digits(text).zfill(2))
    assert crc_value("0x0BC3F483") == options.crc32("0bc3f483") == 0x0BC3F483


def test_one_number_grammar_for_flags_keywords_and_register_traces():
    # The flag type, the library and the CSR trace parser read numbers alike; each spelling checked by int().
    from forensics.cli.args import parse_int
    from forensics.csr.parse import _number

    for text, value in (("4096", 4096), ("0x1000", 0x1000), ("0X1f", 31), ("007", 7), ("8_136", 8136),
                        ("0b101", 5), ("0o17", 15)):
        assert parse_int(text) == options.integer(text) == value
        assert _number(text.replace("_", ""), "value") == value
    for bad in ("", "0x", "1.5", "twelve", "0xg1"):
        with pytest.raises(ValueError):
            options.integer(bad)


def _counting_grammars(monkeypatch):
    """Every grammar wrapped to count its calls by option name (GRAMMARS) and by function (the module's
    grammar functions a lower layer or the CLI's argument types would call by name)."""
    import collections

    calls = collections.Counter()

    def counted(label, grammar):
        def parse(value):
            calls[label] += 1
            return grammar(value)

        return parse

    for name, grammar in list(options.GRAMMARS.items()):
        monkeypatch.setitem(options.GRAMMARS, name, counted(name, grammar))
    for name in ("lanes", "scale", "integer", "non_negative", "positive", "record_size", "zero_point", "names",
                 "hex_bytes", "tolerance_item"):
        monkeypatch.setattr(options, name, counted(f"options.{name}", getattr(options, name)))
    return calls


def test_diff_parses_each_option_once(monkeypatch):
    # Issue 33 item 2: `diff --pad 2,3 --scale 1/256` ran each grammar in three layers (the keyword, the option
    # group, the model context). Now @spellings parses each keyword once and the groups are built from the values.
    calls = _counting_grammars(monkeypatch)
    report = reports.diff(SCORES_A, SCORES_B, pad="2,3", scale="1/256")
    assert dict(calls) == {"pad": 1, "scale": 1}
    assert report.to_dict()["pad_lanes"] == [2, 3] and report.context.layout.scale == 1 / 256


def test_the_command_line_parses_each_option_once(monkeypatch):
    # The argument types read `--pad 2,3 --scale 1/256` in the library's grammar; the report takes those values
    # as they are (forensics.core.options.Parsed) rather than reading them a second time.
    import io

    from forensics.cli import main

    calls = _counting_grammars(monkeypatch)
    out = io.StringIO()
    code = main(["diff", SCORES_A, SCORES_B, "--pad", "2,3", "--scale", "1/256", "--json"], stdout=out,
                stderr=io.StringIO())  # not run_cli: its --width is one more number read
    assert code == 1 and json.loads(out.getvalue())["pad_lanes"] == [2, 3]
    assert dict(calls) == {"options.lanes": 1, "options.scale": 1}


def _cli_json(argv):
    import io

    from forensics.cli import main

    out = io.StringIO()
    code = main([*argv, "--json"], stdout=out, stderr=io.StringIO())
    return code, json.loads(out.getvalue())


def test_diagnose_reads_each_sentinel_once(monkeypatch):
    # diagnose's --sentinel is repeated (coverage's is one): its argument type read each pattern, and the report
    # read the list again; now the report's own grammar (@spellings) takes the CLI's values as they are.
    calls = _counting_grammars(monkeypatch)
    code, doc = _cli_json(["diagnose", SCORES_A, SCORES_B, "--sentinel", "cc", "--sentinel", "0xDEAD"])
    assert code == doc["exit_code"] == 1 and doc["verdict"]  # the broken driver's scores differ
    assert calls["options.hex_bytes"] == 2
    calls.clear()
    reports.diagnose(SCORES_A, SCORES_B, sentinel=["cc", "de ad"])
    assert calls["options.hex_bytes"] == 2
    with pytest.raises(InputError, match="^sentinel: expected hex bytes"):
        reports.diagnose(SCORES_A, SCORES_B, sentinel=["cc", "xyz"])


def test_compare_reads_each_tolerance_once(monkeypatch, tmp_path):
    # compare's --tolerance is K or TENSOR=SPEC, repeated: each item read once, by the CLI's argument type or by
    # the report's own grammar (@spellings), never both.
    assert options.tolerance_item("convert_scores=2lsb") == ("convert_scores", "2lsb")
    assert options.tolerance_item("0x2") == 2
    a, b = _runs(tmp_path)
    calls = _counting_grammars(monkeypatch)
    code, doc = _cli_json(["compare", str(a), str(b), "--tolerance", "1", "--tolerance", "convert_scores=2lsb"])
    assert code == doc["exit_code"] == Verdict(doc["verdict"]).exit_code
    assert calls["options.tolerance_item"] == 2
    calls.clear()
    typed = reports.compare(a, b, tolerance=[1, "convert_scores=2lsb"])
    assert calls["options.tolerance_item"] == 2 and typed.to_dict()["verdict"] == doc["verdict"]
