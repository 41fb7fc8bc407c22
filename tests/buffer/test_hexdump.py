"""hexdump: rows by record, the focus anchor, differing lanes between two files."""

import json

from tests.conftest import assert_one_line_error


def test_hexdump_two_files_marks_differing_lanes(cli):
    r = cli("hexdump", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin",
            "--anchor", "1500", "--context", "1", "--json")
    assert r.code == 0
    rows = json.loads(r.out)["rows"]
    assert [row["index"] for row in rows] == [1499, 1500, 1501]
    assert rows[0]["differing_lanes"] == [] and rows[1]["differing_lanes"] == [0, 1, 2, 3]
    assert rows[1]["a"] == "ff 00 80 80" and rows[1]["b"] == "cc cc cc cc"


def test_hexdump_table_shows_anchor_203(cli):
    r = cli("hexdump", "dumps/ours/convert_scores.bin", "--anchor", "203", "--context", "0")
    assert r.code == 0
    assert ">" in r.out and "01 ff 80 80" in r.out and "0x32c" in r.out


def test_hexdump_default_is_the_first_256_bytes(cli):
    r = cli("hexdump", "dumps/ours/convert_scores.bin", "--json")
    assert len(json.loads(r.out)["rows"]) == 64


def test_hexdump_bad_inputs(cli):
    assert_one_line_error(cli("hexdump", "dumps/ours/convert_scores.bin", "--anchor", "5000"), "past the end")
    assert_one_line_error(cli("hexdump", "dumps/ours/convert_scores.bin", "--at", "9000"), "past the end")
    assert_one_line_error(cli("hexdump", "dumps/ours/nope.bin"), "no such file")
