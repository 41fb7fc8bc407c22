"""No output flag of any command can overwrite or change an input: every one is tried on an input (the same
file, a link to it, a file inside an input run) and refused in one line, exit 2, with nothing written."""

from __future__ import annotations

import argparse
import os

import pytest

from forensics.cli import OUTPUT_FLAGS, build_parser
from forensics.runs.ingest import ingest
from tests.conftest import assert_one_line_error

_COMMON = {"help", "json", "traceback", "width", "color"}
# What a dest spells like when it is an output: a test below fails on a new one missing from OUTPUT_FLAGS.
_LOOKS_LIKE_OUTPUT = {"output", "plot", "heatmap", "draw", "html", "junit", "params_out", "csv", "parquet", "png"}
# Required values that are not paths.
_VALUES = {"layer": "x", "bug": "lanes", "sentinel": "cc", "source": "ours", "format": "npz"}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return dict(build_parser()._subparsers._group_actions[0].choices)


def _output_flags() -> list[tuple[str, str, str]]:
    return [(command, dest, kind) for command, flags in OUTPUT_FLAGS.items() for dest, kind in flags]


def test_the_table_lists_every_output_flag_of_every_command():
    parsers = _parsers()
    listed = {(c, d) for c, d, _ in _output_flags()}
    for command, dest in listed:
        assert command in parsers and any(a.dest == dest for a in parsers[command]._actions), (command, dest)
    found = set()
    for command, parser in parsers.items():
        for action in parser._actions:
            metavar = str(action.metavar or "")
            if "=" in metavar:  # NAME=VALUE values (link --output NAME=ADDR) are not paths
                continue
            if action.dest in _LOOKS_LIKE_OUTPUT or "OUT" in metavar.upper() or "-o" in action.option_strings:
                found.add((command, action.dest))
    assert found <= listed, sorted(found - listed)
    assert len(listed) >= 17  # 15 commands write something


def _argv(command: str, parser, inp: str, out_dest: str, out: str) -> list[str]:
    """A command line that parses, with every path it takes set to `inp` and the output `out_dest` to `out`."""
    argv = [command]
    for action in parser._actions:
        if action.dest in _COMMON or action.dest == out_dest:
            continue
        if not action.option_strings:
            if action.nargs == "?" and action.dest not in ("a",):
                continue
            argv.append(f"input={inp}" if action.dest == "buffers" else _VALUES.get(action.dest, inp))
        elif action.required:
            value = (list(action.choices)[0] if action.choices else _VALUES.get(action.dest, inp))
            argv += [action.option_strings[0], value]
    if command == "anchors-gen":  # no positional: its input is the model it checks
        argv += ["--check-model", inp]
    flag = next(a for a in parser._actions if a.dest == out_dest)
    if flag.option_strings:
        argv += [flag.option_strings[0], out]
    else:  # ingest's RUN: positional, first
        argv.insert(1, out)
    return argv


def _snapshot(root) -> dict:
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(root) for f in fs} | {os.path.relpath(d, root) + "/": None
                                                             for d, _, _ in os.walk(root)}


@pytest.mark.parametrize("command,dest,kind", _output_flags(), ids=lambda v: str(v))
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "inside-run"])
def test_an_output_onto_an_input_is_refused_before_anything_is_written(cli, tmp_path, command, dest, kind, how):
    parser = _parsers()[command]
    inp = tmp_path / "in.bin"
    inp.write_bytes(bytes(range(256)) * 4)
    if how == "same":
        out = inp
    elif how == "symlink":
        out = tmp_path / "link.bin"
        os.symlink(inp, out)
    elif how == "hardlink":
        out = tmp_path / "hard.bin"
        os.link(inp, out)
    else:  # the input is a run (or a file of it) and the output goes inside it
        src = tmp_path / "src.bin"
        src.write_bytes(bytes(64))
        ingest(tmp_path / "R", "ours", [f"input={src}"])
        inp = tmp_path / "R" / ("input/input.bin" if kind == "run" else "")
        out = tmp_path / "R" / ("manifest.json" if kind == "file" else "sub")
        if kind == "run":
            pytest.skip("ingest adds to a run in place: an input inside it is read before anything is removed")
    before = _snapshot(tmp_path)
    r = cli(*_argv(command, parser, os.fspath(inp), dest, os.fspath(out)))
    assert_one_line_error(r, "would")
    assert _snapshot(tmp_path) == before


def test_an_output_directory_holding_an_input_is_not_replaced(cli, tmp_path):
    out = tmp_path / "deps"
    out.mkdir()
    model = out / "m.tflite"
    model.write_bytes(b"not a model")
    assert_one_line_error(cli("extract", model, "-o", out, "--force"), "holds the input")
    assert model.read_bytes() == b"not a model"


def test_an_output_inside_a_deps_directory_is_refused(cli, tmp_path):
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / "anchors.bin").write_bytes(bytes(16))
    (deps / "postprocess.json").write_text("{}")
    (tmp_path / "b.bin").write_bytes(bytes(16))
    r = cli("decode", tmp_path / "b.bin", tmp_path / "b.bin", "--deps", deps, "--draw", deps / "anchors.bin")
    assert_one_line_error(r, "deps directory")
    assert (deps / "anchors.bin").read_bytes() == bytes(16)


def test_outputs_beside_inputs_and_new_files_in_plain_directories_are_fine(tmp_path):
    from forensics.io.outputs import check_outputs

    (tmp_path / "a.bin").write_bytes(b"a")
    (tmp_path / "manifest.json").write_text('{"name": "a web app, not a run"}')
    check_outputs([(tmp_path / "a.png", "file", "--plot")], [tmp_path / "a.bin", tmp_path])
    check_outputs([(tmp_path / "sub" / "x.csv", "file", "-o")], [tmp_path])
    check_outputs([(tmp_path / "out", "dir", "-o")], [tmp_path / "a.bin"])
