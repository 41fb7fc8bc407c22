"""The bundled driver evidence (dumps/evidence/) is exactly what dumps/make_evidence.py writes, and it reads back
to the story's bytes: the writer there shares no code with forensics' readers."""

import filecmp
import json
import subprocess
import sys
import zlib

from tests.conftest import REPO

EVIDENCE = REPO / "dumps" / "evidence"


def test_bundled_evidence_is_reproducible(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "dumps" / "make_evidence.py"), "-o", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    written = sorted(line[len(str(tmp_path)) + 1:] for line in r.stdout.splitlines() if line)
    assert written == sorted(f"evidence/{p.name}" for p in EVIDENCE.iterdir())
    for rel in written:
        assert filecmp.cmp(tmp_path / rel, REPO / "dumps" / rel, shallow=False), rel


def test_evidence_is_small():
    assert sum(p.stat().st_size for p in EVIDENCE.iterdir()) < 200_000


def test_text_dumps_read_back_to_the_dumps(cli, tmp_path):
    out = tmp_path / "scores.bin"
    assert cli("import", "dumps/evidence/windbg_db.txt", "-o", str(out)).code == 0
    assert out.read_bytes() == (REPO / "dumps/ours/convert_scores.bin").read_bytes()
    r = cli("crc", "dumps/evidence/dbgview.log", "--json")
    assert r.code == 0
    broken = (REPO / "dumps/broken/convert_scores.bin").read_bytes()
    assert json.loads(r.out)["files"][0]["crc32"] == f"0x{zlib.crc32(broken):08x}"


def test_driver_log_fingerprints_check_against_the_files(cli):
    ours = cli("verify", "dumps/evidence/driver.log", "dumps/ours/input.bin", "dumps/ours/convert_scores.bin",
               "dumps/ours/Squeeze1.bin", "--json")
    assert ours.code == 0 and len(json.loads(ours.out)["checks"]) == 18
    broken = cli("verify", "dumps/evidence/driver.log", "--buffer", "convert_scores=dumps/broken/convert_scores.bin")
    assert broken.code == 1


def test_register_traces_differ_where_the_generator_put_the_bugs(cli):
    r = cli("csr", "dumps/evidence/csr_libedgetpu.log", "dumps/evidence/csr_driver.log", "--json")
    assert r.code == 1
    found = {(m["kind"], m["offset"]) for m in json.loads(r.out)["mismatches"]}
    assert found == {("value", "0x48788"), ("only_a", "0x485a0")}, found


def test_bundled_deps_and_tail_model_are_reproducible(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "dumps" / "make_deps.py"), str(tmp_path)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert r.returncode == 0, r.stderr
    for name in ("anchors.bin", "postprocess.json", "face_ssd_tail.tflite"):
        assert filecmp.cmp(tmp_path / name, REPO / "dumps" / "face_ssd" / name, shallow=False), name


def test_tail_model_decodes_as_the_deps_directory(cli):
    ours = ("dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin")
    by_model = json.loads(cli("decode", "--model", "dumps/face_ssd/face_ssd_tail.tflite", *ours, "--json").out)
    by_deps = json.loads(cli("decode", "--deps", "dumps/face_ssd", *ours, "--json").out)
    # the same rows (the deps directory also knows the 320x320 input size, so it adds pixel boxes)
    keys = ("row", "anchor", "class", "score", "box", "geometry", "prior")
    assert [{k: d[k] for k in keys} for d in by_model["detections"]] == \
           [{k: d[k] for k in keys} for d in by_deps["detections"]]
    assert by_model["num_detections"] == 9
