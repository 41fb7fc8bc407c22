"""Golden text for the decode tables: fixed width, no colour, compared exactly.

To accept an intended change of layout: FORENSICS_REGOLD=1 pytest tests/decode/test_decode_golden.py, then
review the diff of tests/golden/decode_*.txt before committing it. The numbers in these tables are checked
independently (tests/decode/test_decode_cli.py, the kernel differential tests); this file pins the layout.
"""


import pytest

from tests.conftest import REPO, assert_golden

GOLDEN = REPO / "tests" / "golden"

CASES = {
    "decode_story": ["decode", "--deps", "dumps/face_ssd", "dumps/ours/Squeeze1.bin",
                     "dumps/ours/convert_scores.bin", "--image-size", "640x480"],
    "decode_broken_threshold": ["decode", "--deps", "dumps/face_ssd", "dumps/broken/Squeeze1.bin",
                                "dumps/broken/convert_scores.bin", "--score-threshold", "0.5",
                                "--dequantize", "litert"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_decode_golden_text(cli, name):
    if not (REPO / "dumps" / "ours" / "Squeeze1.bin").is_file():
        pytest.skip("bundled dumps absent")
    result = cli(*CASES[name], width=100)
    assert result.code == 0, result.err
    assert_golden(GOLDEN / f"{name}.txt", result.out)
