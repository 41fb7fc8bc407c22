"""Golden text: one table per command at a fixed width with no colour, compared exactly.

To accept an intended change of layout: FORENSICS_REGOLD=1 pytest tests/cli/test_golden.py, then review
the diff of tests/golden/ before committing it.
"""


import pytest

from tests.conftest import REPO, assert_golden

GOLDEN = REPO / "tests" / "golden"

CASES = {
    "crc_match": ["crc", "dumps/libedgetpu/input.bin", "dumps/ours/input.bin"],
    "crc_chunk_differ": ["crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--chunk", "960"],
    "diff_identical": ["diff", "dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin"],
    "diff_broken": ["diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--limit", "4"],
    "anchors_top": ["anchors", "dumps/ours/convert_scores.bin", "--record", "4"],
    "anchors_nonuniform": ["anchors", "dumps/ours/convert_scores.bin", "--nonuniform"],
    "coverage_broken": ["coverage", "dumps/broken/convert_scores.bin", "--sentinel", "cc"],
    "hexdump_pair": ["hexdump", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin",
                     "--anchor", "1500", "--context", "2"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_text(cli, name):
    assert_golden(GOLDEN / f"{name}.txt", cli(*CASES[name], width=100).out)
