"""What a newcomer trips on at the command line (issue 35): a mistyped command or flag names the closest one and
the help of the command it was given to; a model and a dump given in swapped order are said to be swapped, with
the command line the other way round (which runs as printed); --width and --no-color are in --help; at 80
columns a command to paste is printed whole on its own line and tables fold, never cut."""

from __future__ import annotations

import shlex

import pytest

from forensics.cli import main
from forensics.core.verdict import Verdict
from tests.conftest import assert_one_line_error, run_cli

MODEL, SEED = "dumps/link/tiny_edgetpu.tflite", "dumps/link/seed_driver_0_0.bin"
TAIL, SCORES = "dumps/face_ssd/face_ssd_tail.tflite", "dumps/ours/convert_scores.bin"


@pytest.mark.parametrize("argv, fragment, help_of", [
    (["diff", SCORES, SCORES, "--tolerence", "1"], "did you mean --tolerance?", "forensics diff"),
    (["anchors", SCORES, "--non-uniform"], "did you mean --nonuniform?", "forensics anchors"),
    (["crc", SCORES, "--chunks=960"], "did you mean --chunk?", "forensics crc"),
    (["compare", "a", "b", "--hmtl", "x.html"], "did you mean --html?", "forensics compare"),
])
def test_a_mistyped_flag_names_the_closest_and_the_commands_help(argv, fragment, help_of):
    result = run_cli(*argv)
    assert_one_line_error(result, fragment, f"(see {help_of} --help)", "unrecognized arguments")


def test_a_flag_nothing_is_close_to_suggests_nothing():
    result = run_cli("diff", SCORES, SCORES, "--zzzzzz")
    assert_one_line_error(result, "unrecognized arguments: --zzzzzz", "(see forensics diff --help)")
    assert "did you mean" not in result.err


@pytest.mark.parametrize("word, closest", [("dif", "diff"), ("diagnos", "diagnose"), ("anchor", "anchors"),
                                           ("fingerprnt", "fingerprint")])
def test_a_mistyped_command_names_the_closest(word, closest):
    result = run_cli(word, "x")
    assert_one_line_error(result, f"unknown command '{word}'; did you mean {closest}?", "(see forensics --help)")


@pytest.mark.parametrize("argv, verdict", [
    (["link", SEED, "--check", MODEL], "MISLINKED"),
    (["anchors", TAIL, "--model", SCORES], "NONUNIFORM"),  # its one verdict line (issue 33), the JSON's
    (["hexdump", MODEL, "--model", SEED], None),
    (["diff", TAIL, SCORES, "--model", "dumps/libedgetpu/convert_scores.bin", "--tensor", "convert_scores"], None),
])
def test_a_model_and_a_dump_in_swapped_order_are_said_to_be_swapped(argv, verdict):
    result = run_cli(*argv)
    assert_one_line_error(result, "is not a TFLite model but", "look swapped")
    assert "file identifier" not in result.err
    if verdict is None:
        return
    fixed = shlex.split(result.err.split("the other way round: forensics ", 1)[1])
    again = run_cli(*fixed)  # the command it prints runs as printed, and says what the story's files say
    assert again.code == Verdict(verdict).exit_code and verdict in again.out, again.err


def test_a_model_that_is_no_model_with_no_model_beside_it_keeps_the_readers_error():
    result = run_cli("link", SEED, "--check", SCORES)
    assert_one_line_error(result, "file identifier")


def test_help_documents_width_and_color(capsys):
    import io

    out = io.StringIO()
    assert main(["--help"], stdout=out) == 0
    top = capsys.readouterr().out
    assert "--width COLUMNS" in top and "120 when piped" in top and "--no-color" in top
    assert main(["diff", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--width COLUMNS" in text and "120 when the output is piped" in text and "--no-color" in text
    assert_one_line_error(run_cli("crc", SCORES, "--width", "12"), "at least 40 columns")


def test_piped_output_is_120_columns_wide():
    import io

    from forensics.render.console import PIPED_WIDTH, Output

    assert Output(io.StringIO(), io.StringIO()).console.width == PIPED_WIDTH == 120  # no terminal to ask
    assert Output(io.StringIO(), io.StringIO(), width=80).console.width == 80


def test_at_80_columns_a_command_is_whole_and_tables_fold():
    result = run_cli("demo", "--dumps", "dumps", width=80)
    assert result.code == 0
    lines = result.out.splitlines()
    command = "$ forensics decode dumps/ours/Squeeze1.bin dumps/ours/convert_scores.bin --deps dumps/face_ssd " \
              "--image-size 640x480"
    assert command in lines  # one line of its own, longer than the console
    # the tables of style.table fold, never cut (diagnose's own findings table is its renderer's: not here)
    shared = result.out.split("$ forensics diagnose", 1)[0]
    assert "…" not in shared
    assert all(len(line) <= 80 for line in shared.splitlines() if not line.startswith("$ "))


def test_the_shared_table_folds_and_keeps_whole_columns_whole():
    import io

    from forensics.render.console import make_console, print_all
    from forensics.render.style import paste, table

    listing = table("record", "path", whole=("record",))
    listing.add_row("01 ff 80 80", "dumps/broken/convert_scores.bin " * 3)
    stream = io.StringIO()
    print_all(make_console(stream, width=40, color_system=None), [listing, paste("forensics crc " + "x" * 60)])
    lines = stream.getvalue().splitlines()
    assert "…" not in stream.getvalue()
    assert sum("01 ff 80 80" in line for line in lines) == 1  # the record on one line, the path folded
    assert "".join(line[14:].strip() for line in lines[2:-1]).replace(" ", "") == \
        ("dumps/broken/convert_scores.bin" * 3)
    assert lines[-1] == "$ forensics crc " + "x" * 60  # whole, past the 40 columns
