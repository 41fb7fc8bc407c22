"""fr_link_u32 (c/forensics_run.h) links a bitstream byte for byte as `forensics link` does: a C program fed
the fields and halves of a link writes the same bytes as the command (skipped without a C compiler)."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from tests.conftest import REPO
from tests.link import dwn1

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

PROGRAM = r"""
#include <stdio.h>
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

int main(int argc, char **argv)
{
    static unsigned char buf[1 << 22];
    FILE *in = fopen(argv[1], "rb");
    size_t size = fread(buf, 1, sizeof buf, in);
    unsigned long long offset;
    unsigned long value;
    int rc;
    fclose(in);
    while (scanf("%llu %lu", &offset, &value) == 2)
        if ((rc = fr_link_u32(buf, size, offset, (fr_u32)value)) != 0)
            return 10 - rc;
    in = fopen(argv[2], "wb");
    fwrite(buf, 1, size, in);
    fclose(in);
    (void)argc;
    return 0;
}
"""


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    header = (REPO / "c" / "forensics_run.h").read_text()
    if "fr_link_u32" not in header:
        pytest.skip("c/forensics_run.h has no fr_link_u32 yet")
    d = tmp_path_factory.mktemp("clink")
    (d / "link.c").write_text(PROGRAM)
    subprocess.run([CC, "-std=c99", "-O1", f"-I{REPO / 'c'}", str(d / "link.c"), "-o", str(d / "link")], check=True)
    return d / "link"


def _c_link(linker, original, rows, out):
    text = "".join(f"{o} {v}\n" for o, v in rows)
    subprocess.run([str(linker), str(original), str(out)], input=text, text=True, check=True)
    return out.read_bytes()


def _case(linker, tmp_path, cli, model, executable, rng):
    import json

    plan = json.loads(cli("link", model, "--plan", "--json").out)
    exe = plan["executables"][executable]
    argv = ["link", model, "--executable", str(executable)]
    rows = []
    addresses = {}
    for kind in ("input", "output"):
        for layer in exe["buffers"][kind]:
            addresses[layer["name"]] = [rng.randrange(1 << 32, 1 << 64) for _ in range(exe["batch_size"])]
            argv += [f"--{kind}", layer["name"] + "=" + ",".join(hex(a) for a in addresses[layer["name"]])]
    special = {"parameter": rng.randrange(1 << 32, 1 << 64), "scratch": rng.randrange(1 << 32, 1 << 64)}
    argv += ["--parameter", hex(special["parameter"]), "--scratch", hex(special["scratch"])]
    original = tmp_path / "original.bin"
    assert cli("link", model, "--executable", str(executable), "--allow-unlinked", "-o", original,
               "--force").code == 0
    order = sorted(exe["bitstreams"][0]["fields"], key=lambda f: ["scratch", "parameter", "input", "output"].index(
        f["buffer"]))
    for f in order:
        address = special[f["buffer"]] if f["buffer"] in special else addresses[f["name"]][f["batch"]]
        rows.append((f["offset_bit"], address & 0xFFFFFFFF if f["position"] == "LOWER_32BIT" else address >> 32))
    ours = tmp_path / "ours.bin"
    r = cli(*argv, "-o", ours, "--force")
    assert r.code == 0, r.err
    assert _c_link(linker, original, rows, tmp_path / "c.bin") == ours.read_bytes()


def test_the_small_model(linker, tmp_path, cli):
    model = tmp_path / "small.tflite"
    model.write_bytes(dwn1.model(dwn1.small_executables()))
    rng = random.Random(1)
    for _ in range(5):
        _case(linker, tmp_path, cli, model, 0, rng)


@pytest.mark.parametrize("name", ["ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
                                  "mobilenet_v1_0.25_128_quant_edgetpu.tflite"])
def test_real_models(linker, tmp_path, cli, shared_data, name):
    rng = random.Random(name)
    for executable in (0, 1):
        _case(linker, tmp_path, cli, shared_data / name, executable, rng)


def test_a_field_past_the_end_is_refused(linker, tmp_path):
    data = tmp_path / "eight.bin"
    data.write_bytes(bytes(8))
    proc = subprocess.run([str(linker), str(data), str(tmp_path / "o.bin")], input="33 1\n", text=True)
    assert proc.returncode > 10  # fr_link_u32 returned a negative code
