"""Every judging command of the command table prints exactly one `VERDICT | message` line, and it is the JSON's
(issue 33): the terminal (`--width 100 --no-color`), `--json`, `--html` and `--junit` (for the commands whose table
entry has those outputs) carry one verdict and message, and the exit code is the JSON's `exit_code`. A command
that judges nothing prints no verdict line and its JSON has no verdict. The commands come from the table
(forensics.reports.commands.COMMANDS), each with a passing and a differing case where it has both, on the bundled
dumps, runs made here from them (plain bytes and a manifest written by hand), and ../shared models (skipped when
absent)."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from forensics.core.verdict import Verdict
from forensics.reports.commands import COMMANDS
from tests.conftest import SHARED_CORAL, run_cli
from tests.runs.driver_runs import f32, write_driver_run

# the longest word first: `WITHIN TOLERANCE` before a shorter word it might start with
WORDS = sorted((v.value for v in Verdict), key=len, reverse=True)
VERDICT_LINE = re.compile("^(" + "|".join(re.escape(w) for w in WORDS) + r") \| (.*)$")
COMPOSITE = {"demo"}  # a command that runs others: each step prints its own verdict line
SEG = "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
LIB, OURS, BROKEN = "dumps/libedgetpu", "dumps/ours", "dumps/broken"


# --- the cases: each builds its files under `tmp` and returns the argv -------------------------------------

def _put(path: Path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else np.asarray(data).tobytes())
    return str(path)


def _scores(change=None) -> np.ndarray:
    """A scores buffer of 4-byte records (pad lanes 2 and 3), as a chip writes it; `change` edits a copy."""
    rng = np.random.default_rng(0)
    scores = np.full((2034, 4), 0x80, np.uint8)
    scores[:, 0], scores[:, 1] = 0xFF, 0
    scores[rng.choice(2034, 5, replace=False), 1] = rng.integers(1, 255, 5)
    return scores if change is None else change(scores.copy())


def _run(path: Path, source: str, scores: np.ndarray) -> Path:
    image = np.random.default_rng(1).integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)
    meta = {"dtype": "uint8", "shape": [1, 2034, 2], "record_size": 4, "pad_lanes": [2, 3]}
    return write_driver_run(path, source, [("input", "input", image, {"dtype": "uint8", "shape": [1, 8, 8, 3]}),
                                           ("raw", "convert_scores", scores, meta)])


def _pads(s):
    s[:, 2:] = 0xCC
    return s


def _differs(s):
    s[700, 1] ^= 0x10
    return s


def _small(s):
    s[700, 1] = (int(s[700, 1]) + 1) % 256
    return s


def _pair(tmp: Path, change=None) -> list:
    return [str(_run(tmp / "a", "libedgetpu", _scores())), str(_run(tmp / "b", "ours", _scores(change)))]


def _changed_pair(tmp: Path) -> list:
    """Two runs of the same bytes, B's scores file edited after capture (its manifest CRC no longer holds)."""
    a, b = _pair(tmp)
    path = Path(b) / "raw" / "convert_scores.bin"
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    return [a, b]


def _farm(tmp: Path, differ: bool) -> Path:
    farm = tmp / "farm"
    for i in range(3):
        _run(farm / f"pair-{i}" / "a_libedgetpu", "libedgetpu", _scores())
        _run(farm / f"pair-{i}" / "b_ours", "ours", _scores(_differs if differ and i == 1 else None))
    return farm


def _ingested(tmp: Path, name: str, source: str) -> str:
    run = tmp / name
    assert run_cli("ingest", run, "--source", source, f"raw:convert_scores={source}/convert_scores.bin",
                   f"tensor:Squeeze1={source}/Squeeze1.bin").code == 0
    return str(run)


def _loop(tmp: Path, broken: tuple = ()) -> str:
    for i in range(1, 5):
        scores = _scores(_differs if i in broken else None)
        _run(tmp / "loop" / f"run-{i}", "ours", scores)
    return str(tmp / "loop")


def _refs(tmp: Path, spread: float) -> str:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64).astype(np.float32)
    for name, values in (("litert", x), ("xnnpack", x + np.float32(spread))):
        write_driver_run(tmp / "refs" / name, name, [("tensor", "logits", values, f32([1, 64]))])
    return str(tmp / "refs")


def _heads(tmp: Path) -> list:
    data = (Path(LIB) / "convert_scores.bin").read_bytes()[:256]
    return [_put(tmp / "a.bin", data), _put(tmp / "b.bin", data)]


def _pad_only(tmp: Path) -> list:
    a = _scores()
    return [_put(tmp / "a.bin", a), _put(tmp / "b.bin", _pads(a.copy()))]


def _shared(name: str) -> str:
    path = SHARED_CORAL / name
    if not path.is_file():
        pytest.skip(f"../shared/data/coral/{name} is absent: real-model case skipped")
    return str(path)


CASES = {
    "crc": {"same": lambda t: ["crc", f"{LIB}/input.bin", f"{OURS}/input.bin"],
            "differ": lambda t: ["crc", f"{LIB}/input.bin", f"{BROKEN}/input.bin"],
            "expect": lambda t: ["crc", f"{LIB}/input.bin", f"{BROKEN}/input.bin", "--expect", "0x0bc3f483"]},
    "diff": {"same": lambda t: ["diff", f"{LIB}/input.bin", f"{OURS}/input.bin"],
             "differ": lambda t: ["diff", f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"],
             "within": lambda t: ["diff", *_pair_bytes(t, _small), "--tolerance", "1"],
             "pad lanes": lambda t: ["diff", *_pad_only(t), "--record", "4", "--pad", "2,3"],
             "head window": lambda t: ["diff", *_heads(t), "--deps", "dumps/face_ssd"]},
    "anchors": {"uniform": lambda t: ["anchors", _put(t / "s.bin", np.tile(np.array([255, 0, 128, 128], np.uint8),
                                                                          (2034, 1))), "--record", "4"],
                "five depart": lambda t: ["anchors", _put(t / "s.bin", _scores()), "--record", "4"],
                "nonuniform": lambda t: ["anchors", f"{OURS}/convert_scores.bin"],
                "broken": lambda t: ["anchors", f"{BROKEN}/convert_scores.bin"]},
    "coverage": {"covered": lambda t: ["coverage", f"{LIB}/convert_scores.bin", "--sentinel", "cc"],
                 "sentinel left": lambda t: ["coverage", f"{BROKEN}/convert_scores.bin", "--sentinel", "cc"]},
    "hexdump": {"pair": lambda t: ["hexdump", f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                                   "--anchor", "1500", "--context", "1"]},
    "graph": {"model": lambda t: ["graph", "dumps/face_ssd/face_ssd_tail.tflite"]},
    "extract": {"model": lambda t: ["extract", "dumps/face_ssd/face_ssd_tail.tflite", "-o", t / "deps"]},
    "relayout": {"raw": lambda t: ["relayout", _put(t / "raw.bin", bytes(176368)), "--model", _shared(SEG),
                                   "--layer", "convert_scores", "-o", t / "r.bin"]},
    "decode": {"decode": lambda t: ["decode", "--deps", "dumps/face_ssd", f"{OURS}/Squeeze1.bin",
                                    f"{OURS}/convert_scores.bin"],
               "replay": lambda t: ["decode", "--model", "dumps/face_ssd/face_ssd_tail.tflite", f"{OURS}/Squeeze1.bin",
                                    f"{OURS}/convert_scores.bin", "--replay"]},
    "tail": {"model": lambda t: ["tail", _shared(SEG), "-o", t / "tail.tflite"]},
    "anchors-gen": {"generate": lambda t: ["anchors-gen", "--input-size", "320x320", "--anchor", "203"],
                    "check": lambda t: ["anchors-gen", "--input-size", "320x320", "--check-deps", "dumps/face_ssd",
                                        "--anchor", "203"],
                    "check differ": lambda t: ["anchors-gen", "--input-size", "300x300", "--check-deps",
                                               "dumps/face_ssd", "--anchor", "203"]},
    "capture": {"tail": lambda t: ["capture", "--model", _shared(SEG), "--tail-only",
                                   "--input", f"convert_scores={_put(t / 's.bin', bytes(174447))}",
                                   "--input", f"Squeeze1={_put(t / 'b.bin', bytes(7668))}", "-o", t / "run"]},
    "ingest": {"run": lambda t: ["ingest", t / "run", "--source", "ours", f"input={OURS}/input.bin"]},
    "compare": {"match": lambda t: ["compare", *_pair(t)],
                "differ": lambda t: ["compare", *_pair(t, _differs)],
                "within": lambda t: ["compare", *_pair(t, _small), "--tolerance", "1"],
                "pad lanes": lambda t: ["compare", *_pair(t, _pads)],
                "changed after capture": lambda t: ["compare", *_changed_pair(t)],
                "batch match": lambda t: ["compare", "--batch", _farm(t, False), "-o", t / "summary.csv"],
                "batch differ": lambda t: ["compare", "--batch", _farm(t, True), "-o", t / "summary.csv"]},
    "export": {"npz": lambda t: ["export", _pair(t)[0], "--format", "npz", "-o", t / "run.npz"]},
    "diagnose": {"identical": lambda t: ["diagnose", f"{LIB}/input.bin", f"{OURS}/input.bin"],
                 "differ": lambda t: ["diagnose", f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"],
                 "pad lanes": lambda t: ["diagnose", *_pad_only(t), "--record", "4", "--pad", "2,3"]},
    "simulate": {"bug": lambda t: ["simulate", f"{LIB}/Squeeze1.bin", "--bug", "lane_swap:16", "-o", t / "s.bin"]},
    "csr": {"pair": lambda t: ["csr", "dumps/evidence/csr_libedgetpu.log", "dumps/evidence/csr_driver.log"],
            "same": lambda t: ["csr", "dumps/evidence/csr_libedgetpu.log", "dumps/evidence/csr_libedgetpu.log"],
            "driver log": lambda t: ["csr", "dumps/evidence/csr_libedgetpu.log", "dumps/evidence/npu_driver.log"],
            "name": lambda t: ["csr", "--name", "0x48788"], "unknown": lambda t: ["csr", "--name", "0x486c4"],
            "find": lambda t: ["csr", "--find", "tileconfig"], "find none": lambda t: ["csr", "--find", "no_such_reg"]},
    "import": {"windbg": lambda t: ["import", "dumps/evidence/windbg_db.txt", "-o", t / "out.bin"]},
    "fingerprint": {"input": lambda t: ["fingerprint", f"{OURS}/input.bin", "--page", "65536", "--tag", "input"]},
    "verify": {"ok": lambda t: ["verify", "dumps/evidence/driver.log", f"{OURS}/input.bin",
                                f"{OURS}/convert_scores.bin"],
               "broken logged": lambda t: ["verify", "dumps/evidence/npu_driver.log", f"{OURS}/input.bin",
                                           "dumps/evidence/broken_scores_alloc.bin"],
               "differ": lambda t: ["verify", "dumps/evidence/driver.log", f"{BROKEN}/input.bin",
                                    f"{OURS}/convert_scores.bin"],
               "short file": lambda t: ["verify", "dumps/evidence/short_input.log", "dumps/evidence/short_input.bin"]},
    "demo": {"story": lambda t: ["demo", "--dumps", "dumps"]},
    "link": {"linked": lambda t: ["link", "dumps/link/tiny_edgetpu.tflite", "--check", "dumps/link/libedgetpu_0_0.bin"],
             "mislinked": lambda t: ["link", "dumps/link/tiny_edgetpu.tflite", "--check",
                                     "dumps/link/seed_driver_0_0.bin"],
             "plan": lambda t: ["link", "dumps/link/tiny_edgetpu.tflite", "--plan"]},
    "repeat": {"agree": lambda t: ["repeat", _loop(t)],
               "outlier": lambda t: ["repeat", _loop(t, broken=(3,))]},
    "tolerance": {"spread": lambda t: ["tolerance", _refs(t, 1e-6)],
                  "no spread": lambda t: ["tolerance", _refs(t, 0.0)]},
    "impact": {"broken": lambda t: ["impact", _ingested(t, "a", LIB), _ingested(t, "b", BROKEN),
                                    "--deps", "dumps/face_ssd"],
               "ours": lambda t: ["impact", _ingested(t, "a", LIB), _ingested(t, "b", OURS),
                                  "--deps", "dumps/face_ssd"]},
}


# The verdict each judging case must reach, known from how its inputs were made (not from forensics' output):
# issue 33's three wrong outputs among them (a file changed after capture, pad lanes only, two 256-byte heads).
EXPECT = {
    ("crc", "same"): "MATCH", ("crc", "differ"): "DIFFER", ("crc", "expect"): "DIFFER",
    ("diff", "same"): "MATCH", ("diff", "differ"): "DIFFER", ("diff", "within"): "WITHIN TOLERANCE",
    ("diff", "pad lanes"): "MATCH", ("diff", "head window"): "HEAD WINDOW",
    ("anchors", "uniform"): "OK", ("anchors", "five depart"): "NONUNIFORM", ("anchors", "broken"): "NONUNIFORM",
    ("coverage", "covered"): "OK", ("coverage", "sentinel left"): "WARNING",
    ("decode", "replay"): "MATCH", ("anchors-gen", "check"): "MATCH",
    ("anchors-gen", "check differ"): "DIFFER",  # 300x300 makes 1,917 anchors, face_ssd has 2,034
    ("compare", "match"): "MATCH", ("compare", "differ"): "DIFFER", ("compare", "within"): "WITHIN TOLERANCE",
    ("compare", "pad lanes"): "MATCH", ("compare", "changed after capture"): "DIFFER",
    ("compare", "batch match"): "MATCH", ("compare", "batch differ"): "DIFFER",
    ("diagnose", "identical"): "IDENTICAL", ("diagnose", "pad lanes"): "IDENTICAL",
    ("diagnose", "differ"): "EXPLAINED",  # the broken driver's fill and truncation
    ("csr", "same"): "PASSED", ("csr", "pair"): "FAILED", ("csr", "name"): "FOUND", ("csr", "unknown"): "NOT FOUND",
    ("csr", "find"): "FOUND", ("csr", "find none"): "NOT FOUND",  # 0x48788 is tileconfig0 in the Beagle table
    ("verify", "ok"): "MATCH", ("verify", "broken logged"): "MATCH", ("verify", "differ"): "DIFFER",
    ("link", "linked"): "LINKED", ("link", "mislinked"): "MISLINKED",
    ("repeat", "agree"): "MATCH", ("repeat", "outlier"): "DIFFER",
    ("impact", "ours"): "MATCH", ("impact", "broken"): "DIFFER",
}


def _pair_bytes(tmp: Path, change) -> list:
    a = _scores()
    return [_put(tmp / "a.bin", a), _put(tmp / "b.bin", change(a.copy()))]


# --- the faces ---------------------------------------------------------------------------------------------

def verdict_lines(text: str) -> list[tuple[str, str]]:
    return [m.groups() for m in map(VERDICT_LINE.match, (line.rstrip() for line in text.splitlines())) if m]


def html_verdict(page: str) -> str:
    div = re.search(r'<div class="verdict [a-z]+" id="verdict">(.*?)</div>', page, re.S)
    assert div, "the page has no verdict"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", div.group(1))).split())


def junit_verdict(document: str) -> str:
    suite = ET.fromstring(document).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    return f"{props['verdict']} | {props['message']}"


def _case_params():
    for command in COMMANDS:
        for name in CASES.get(command.name, {"(no case)": None}):
            yield pytest.param(command, name, id=f"{command.name}-{name}")


def test_every_command_of_the_table_has_a_case():
    assert sorted(c.name for c in COMMANDS if c.name not in CASES) == []
    assert sorted(set(CASES) - {c.name for c in COMMANDS}) == []


@pytest.mark.parametrize("command, case", list(_case_params()))
def test_one_verdict_line_and_it_is_the_json(tmp_path, command, case):
    build = CASES[command.name][case]
    term_dir, json_dir, out_dir = tmp_path / "term", tmp_path / "json", tmp_path / "out"
    for d in (term_dir, json_dir, out_dir):
        d.mkdir()
    term = run_cli(*build(term_dir), width=100)
    assert term.code in (0, 1), (term.code, term.err)
    result = run_cli(*build(json_dir), "--json")
    assert result.code == term.code, result.err
    doc = json.loads(result.out)
    lines = verdict_lines(term.out)
    if command.name in COMPOSITE:  # the steps' own lines: at most one per step, saying the exit the step had
        steps = term.out.split("\n$ forensics ")[1:]
        assert len(steps) == len(doc["steps"]) and all(step["ok"] for step in doc["steps"])
        for text, step in zip(steps, doc["steps"]):
            said = verdict_lines(text)
            assert len(said) <= 1, text
            assert not said or Verdict(said[0][0]).exit_code == step["exit"], (said, step)
        assert sum(1 for text in steps if verdict_lines(text)) >= len(doc["steps"]) // 2
        return
    if doc.get("verdict") is None:  # a command that judges nothing says no verdict anywhere
        assert lines == [], term.out
        assert term.code == doc.get("exit_code", 0) == 0, doc.get("exit_code")
        return
    assert len(lines) == 1, term.out
    (word, message), = lines
    assert doc["verdict"] == EXPECT.get((command.name, case), doc["verdict"]), doc["message"]
    assert word == doc["verdict"], (word, doc["verdict"])
    # the terminal folds a long message at 100 columns: its first line is the start of the JSON's message
    assert " ".join(doc["message"].split()).startswith(message.strip()), (message, doc["message"])
    assert term.code == doc["exit_code"] == Verdict(doc["verdict"]).exit_code
    flags = {dest for dest, _kind in command.outputs} & {"html", "junit"}
    if flags:
        argv = build(out_dir)
        page, xml = out_dir / "report.html", out_dir / "report.xml"
        extra = (["--html", page] if "html" in flags else []) + (["--junit", xml] if "junit" in flags else [])
        assert run_cli(*argv, *extra).code == term.code
        expected = f"{doc['verdict']} | {' '.join(doc['message'].split())}"
        if "html" in flags:
            assert html_verdict(page.read_text(encoding="utf-8")) == expected
        if "--junit" in extra:
            assert " ".join(junit_verdict(xml.read_text(encoding="utf-8")).split()) == expected


def test_the_cases_judge_both_ways():
    """The judging commands are tried passing and not: a case list that only ever passes proves little."""
    exits = {}
    for (command, case), word in EXPECT.items():
        assert case in CASES[command], (command, case)
        exits.setdefault(command, set()).add(Verdict(word).exit_code)
    # anchors lists and never fails; a replay that disagrees needs a kernel other than LiteRT's (not shipped)
    assert {c for c, codes in exits.items() if codes != {0, 1}} == {"anchors", "decode"}


# --- issue 33's three wrong outputs, on every face ------------------------------------------------------------

def _faces(argv: list, tmp: Path, *, files: bool) -> dict:
    """Each face's verdict line (the terminal's, the JSON's, the --html page's and the --junit suite's when
    `files`) and each face's exit code."""
    term = run_cli(*argv, width=400)
    lines = verdict_lines(term.out)
    assert len(lines) == 1, term.out
    doc = json.loads(run_cli(*argv, "--json").out)
    out = {"terminal": " | ".join(lines[0]), "json": f"{doc['verdict']} | {doc['message']}"}
    codes = {term.code, doc["exit_code"], Verdict(doc["verdict"]).exit_code}
    if files:
        page, xml = tmp / "r.html", tmp / "r.xml"
        codes.add(run_cli(*argv, "--html", page, "--junit", xml).code)
        out["html"] = html_verdict(page.read_text(encoding="utf-8"))
        out["junit"] = junit_verdict(xml.read_text(encoding="utf-8"))
    assert len(codes) == 1, codes
    assert len(set(out.values())) == 1, out
    return {"line": out["json"], "code": codes.pop()}


def test_a_file_changed_after_capture_is_differ_on_every_face(tmp_path):
    """It printed WITHIN TOLERANCE on the terminal and --html while --json and --junit said DIFFER, exit 1."""
    for extra in ((), ("--tolerance", "1")):
        said = _faces(["compare", *_changed_pair(tmp_path / f"c{len(extra)}"), *extra], tmp_path, files=True)
        assert said["code"] == 1 and said["line"].startswith("DIFFER | ") and "changed after capture" in said["line"]


def test_a_pair_differing_only_in_declared_pad_lanes_passes_in_every_command(tmp_path):
    """diff and diagnose exited 0 and compare of runs holding the same files exited 1."""
    a, b = _pair(tmp_path / "runs", _pads)
    files = [Path(a) / "raw" / "convert_scores.bin", Path(b) / "raw" / "convert_scores.bin"]
    assert files[0].read_bytes() != files[1].read_bytes()  # the pad lanes do differ
    said = {"compare": _faces(["compare", a, b], tmp_path, files=True)}
    for command in ("diff", "diagnose"):
        said[command] = _faces([command, *files, "--record", "4", "--pad", "2,3"], tmp_path, files=False)
    assert {c: s["code"] for c, s in said.items()} == {"compare": 0, "diff": 0, "diagnose": 0}
    assert said["compare"]["line"].startswith("MATCH | ") and said["diff"]["line"].startswith("MATCH | ")
    assert said["diagnose"]["line"].startswith("IDENTICAL | ")


def test_two_256_byte_heads_with_deps_print_one_head_window_line(tmp_path):
    """`diff` of two 256-byte heads with --deps printed `MATCH | ...` and then `HEAD WINDOW | ...`, exit 1."""
    said = _faces(["diff", *_heads(tmp_path), "--deps", "dumps/face_ssd"], tmp_path, files=False)
    assert said["code"] == 1 and said["line"].startswith("HEAD WINDOW | the 256 bytes compared match, but ")
    from forensics import reports

    report = reports.diff(*_heads(tmp_path / "lib"), deps="dumps/face_ssd")  # the notebook's face
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report._repr_html_())).split())
    assert page.count("HEAD WINDOW |") == 1 and "MATCH |" not in page
