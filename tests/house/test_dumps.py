"""The bundled dumps are exactly what dumps/make_dumps.py generates, and they tell the story."""

import filecmp
import json
import subprocess
import sys

from tests.conftest import REPO


def test_bundled_dumps_are_reproducible(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "dumps" / "make_dumps.py"), "-o", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    written = [line for line in r.stdout.splitlines() if line]
    assert len(written) == 18
    for path in written:
        rel = path[len(str(tmp_path)) + 1:]
        assert filecmp.cmp(path, REPO / "dumps" / rel, shallow=False), rel


def test_story_numbers(cli):
    assert cli("crc", "dumps/libedgetpu/input.bin", "dumps/ours/input.bin").code == 0
    assert cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin").code == 0
    assert cli("diff", "dumps/libedgetpu/Squeeze1.bin", "dumps/ours/Squeeze1.bin").code == 0
    boxes = open(REPO / "dumps/ours/Squeeze1.bin", "rb").read()
    assert boxes[0:4].hex(" ") == "94 88 73 4b" and boxes[203 * 4:204 * 4].hex(" ") == "92 9c 8b a4"
    r = cli("crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--chunk", "960", "--json")
    assert r.code == 1 and json.loads(r.out)["first_differing_chunk"] == 117
