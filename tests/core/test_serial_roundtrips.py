"""Every result type that derives from forensics.core.serial.Serial reads back from its own document (built
from running the library on the bundled dumps), and every command whose result is one loads back from its saved
`--json` (forensics.reports.load) and renders the same terminal text."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import pkgutil
import sys
from pathlib import Path

import pytest

import forensics
from forensics.core import serial
from tests.conftest import rendered_text, saved_document

LIB = "dumps/libedgetpu"
BROKEN = "dumps/broken"


def _serial_types() -> set[type]:
    for info in pkgutil.walk_packages(forensics.__path__, "forensics."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    found, todo = set(), [serial.Serial]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found and sub.__module__.startswith("forensics."):
                found.add(sub)
                todo.append(sub)
    # a slots dataclass is a new class: the one it replaced stays a subclass until collected
    return {kind for kind in found if getattr(sys.modules[kind.__module__], kind.__name__, None) is kind}


def _reports():
    """(command name, report) for the converted commands on the bundled dumps."""
    from forensics import reports

    return [
        ("crc pair", reports.crc(f"{LIB}/input.bin", "dumps/ours/input.bin")),
        ("crc chunks", reports.crc(f"{LIB}/input.bin", f"{BROKEN}/input.bin", chunk=960)),
        ("crc expect", reports.crc(f"{LIB}/input.bin", expect=0x12345678)),
        ("crc one", reports.crc(f"{LIB}/input.bin")),
        ("coverage untouched", reports.coverage(f"{BROKEN}/convert_scores.bin", sentinel="cc")),
        ("coverage written", reports.coverage(f"{LIB}/convert_scores.bin", sentinel="cc")),
        ("coverage runs", reports.coverage("dumps/evidence/convert_scores_alloc.bin", sentinel="00", min_run=4)),
        ("csr name", reports.csr(name="0x484f8")),
        ("csr unknown", reports.csr(name="0x12344")),  # its neighbours
        ("csr find", reports.csr(find="tileconfig")),
        ("csr not found", reports.csr(find="nosuchregister")),
        ("diagnose identical", reports.diagnose(f"{LIB}/input.bin", "dumps/ours/input.bin")),
        ("diagnose broken", reports.diagnose(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin")),
        ("diagnose tolerance", reports.diagnose(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                                                tolerance=1)),
        *((f"diagnose {bug}", reports.diagnose(f"{LIB}/convert_scores.bin", _simulated(bug)))
          for bug in ("shift:4", "rotation:8", "signedness", "fill:100-300:cc", "lane_swap:16")),
        ("link plan", reports.link(LINK_MODEL, plan=True)),
        ("link linked", reports.link(LINK_MODEL, check="dumps/link/libedgetpu_0_0.bin")),
        ("link mislinked", reports.link(LINK_MODEL, check="dumps/link/seed_driver_0_0.bin")),
        ("link parameter caching", reports.link(LINK_MODEL, check="dumps/link/seed_driver_1_0.bin")),
        ("link expect", reports.link(LINK_MODEL, check="dumps/link/libedgetpu_0_0.bin", expect=["scratch=0x1000"])),
        ("link foreign", reports.link(LINK_MODEL, check=f"{LIB}/input.bin")),
        ("link parameters", reports.link(LINK_MODEL, check=_parameters())),
        ("repeat modal", reports.repeat(f"{_runs()}/loop")),
        ("repeat reference", reports.repeat(f"{_runs()}/loop", reference=f"{_runs()}/loop/run-5")),
        ("repeat periodic", reports.repeat(f"{_runs()}/periodic")),
        ("graph edgetpu", reports.graph(LINK_MODEL)),
        ("graph tail", reports.graph("dumps/face_ssd/face_ssd_tail.tflite")),
        ("batch", reports.compare(batch=_farm(), output=f"{_runs()}/summary.csv")),
        ("batch deps", reports.compare(batch=_farm(), output=f"{_runs()}/summary-deps.csv", deps="dumps/face_ssd")),
        ("tail", reports.tail(LINK_MODEL, output=f"{_runs()}/tail.tflite")),
        ("export npz", reports.export(f"{_runs()}/broken", format="npz", output=f"{_runs()}/broken.npz")),
        ("export polygraphy", reports.export(f"{_runs()}/lib", format="polygraphy", output=f"{_runs()}/lib.json")),
        # h1: diff, anchors and hexdump (RecordsReport, HexdumpReport) with their layouts, model context, fits, sources
        ("diff broken", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", limit=3)),
        ("diff same", reports.diff(f"{LIB}/convert_scores.bin", "dumps/ours/convert_scores.bin")),
        ("diff no stats", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", no_stats=True,
                                       tolerance=1, all=True)),
        ("diff atol mean", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", atol="1lsb",
                                        rtol="0.5", check="mean")),
        ("diff deps", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", deps="dumps/face_ssd")),
        ("diff model", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                                    model="dumps/face_ssd/face_ssd_tail.tflite", limit=2)),
        ("diff allocation", reports.diff(f"{LIB}/convert_scores.bin", "dumps/evidence/convert_scores_alloc.bin",
                                         deps="dumps/face_ssd")),
        ("diff head", reports.diff("dumps/evidence/short_input.bin", f"{LIB}/input.bin")),
        ("diff slice", reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", offset=4000,
                                    length=2000, limit=1)),
        ("diff text dump", reports.diff("dumps/evidence/windbg_db.txt", f"{LIB}/convert_scores.bin")),
        ("anchors", reports.anchors("dumps/ours/convert_scores.bin")),
        ("anchors nonuniform deps", reports.anchors("dumps/ours/convert_scores.bin", nonuniform=True,
                                                    deps="dumps/face_ssd")),
        ("anchors head", reports.anchors("dumps/evidence/short_input.bin", model="dumps/face_ssd/face_ssd_tail.tflite")),
        ("anchors ranked deps", reports.anchors(_write(bytes((i * 37 % 256, (i * 101 + 7) % 256, 0x80, 0x80)[k]
                                                             for i in range(2034) for k in range(4)), "h1_ranked"),
                                                deps="dumps/face_ssd")),  # its top scores' places
        ("hexdump pair", reports.hexdump(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", anchor=1500,
                                         context=1)),
        ("hexdump deps", reports.hexdump(f"{LIB}/Squeeze1.bin", f"{BROKEN}/Squeeze1.bin", deps="dumps/face_ssd",
                                         anchor=3)),
        ("hexdump text dump", reports.hexdump("dumps/evidence/windbg_db.txt", at=0, length=32)),
        ("fingerprint", reports.fingerprint("dumps/ours/input.bin", page=65536, tag="input")),
        ("fingerprint short", reports.fingerprint("dumps/evidence/short_input.bin", page=1024)),
        ("fingerprint slice", reports.fingerprint(f"{LIB}/input.bin", offset=100, length=3000)),
        ("fingerprint text dump", reports.fingerprint("dumps/evidence/windbg_db.txt")),
        ("verify match", reports.verify("dumps/evidence/driver.log", "dumps/ours/input.bin",
                                        "dumps/ours/convert_scores.bin")),
        ("verify differ", reports.verify("dumps/evidence/npu_driver.log", "dumps/ours/input.bin",
                                         "dumps/evidence/broken_scores_alloc.bin")),
        ("verify past end", reports.verify("dumps/evidence/short_input.log", "dumps/evidence/short_input.bin")),
        ("verify unassigned", reports.verify("dumps/evidence/driver.log", f"{LIB}/convert_scores.bin")),
        # h2: compare RUN_A RUN_B (match, differ, --deps, --tolerance, a file changed after capture, a stage one
        # run lacks) and tolerance; with LiteRT, captures of the face SSD's tail (detections, another runtime's
        # rounding, --model, --tolerance-from)
        ("compare differ", reports.compare(f"{_runs()}/lib", f"{_runs()}/broken")),
        ("compare match", reports.compare(f"{_runs()}/lib", f"{_runs()}/ours")),
        ("compare deps", reports.compare(f"{_runs()}/lib", f"{_runs()}/broken", deps="dumps/face_ssd", limit=2)),
        ("compare tolerance", reports.compare(f"{_runs()}/lib", f"{_runs()}/broken",
                                              tolerance=["convert_scores=1lsb"])),
        ("compare tolerance K", reports.compare(f"{_runs()}/lib", f"{_runs()}/ours", tolerance=[1])),
        ("compare changed", reports.compare(f"{_runs()}/lib", _h2_changed())),
        ("compare one-sided", reports.compare(f"{_runs()}/loop/run-1", f"{_runs()}/broken")),
        ("tolerance ingested", reports.tolerance(f"{_runs()}/lib", f"{_runs()}/ours")),
        ("ingest", reports.ingest(f"{_runs()}/h2-ingest", [f"input={LIB}/input.bin", "log=dumps/evidence/driver.log",
                                                           f"raw:convert_scores={LIB}/convert_scores.bin"],
                                  source="libedgetpu")),
        ("ingest npz", reports.ingest(f"{_runs()}/h2-npz", f"{_runs()}/broken.npz", from_format="npz",
                                      source="broken")),
        *_h2_tails(),
        *_h2_images(),
        # h3: decode (its rows, geometry, letterbox, replay, drawing, display threshold), decode --top-k,
        # anchors-gen, impact, csr (two traces), simulate, extract, relayout
        *_h3_reports(),
    ]


def _h3_reports() -> list:
    """(name, report) of h3's commands: decode and anchors-gen (and decode --top-k when ../shared is there)."""
    from forensics import reports

    ours, deps = ("dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin"), "dumps/face_ssd"
    out = [
        ("decode", reports.decode(*ours, deps=deps)),
        ("decode image size", reports.decode(*ours, deps=deps, image_size="640x480")),
        ("decode broken threshold", reports.decode(f"{BROKEN}/Squeeze1.bin", f"{BROKEN}/convert_scores.bin",
                                                   deps=deps, score_threshold=0.3, dequantize="litert")),
        ("decode model", reports.decode(*ours, model="dumps/face_ssd/face_ssd_tail.tflite", input_size="300x300")),
        ("decode drawn", reports.decode(f"{BROKEN}/Squeeze1.bin", f"{BROKEN}/convert_scores.bin", deps=deps,
                                        image_size="640x480", draw=f"{_runs()}/both.png",
                                        overlay_boxes=f"{LIB}/Squeeze1.bin",
                                        overlay_scores=f"{LIB}/convert_scores.bin", names="libedgetpu,ours")),
        *((f"decode replay {i}", report) for i, report in enumerate(_replayed())),
        ("anchors-gen", reports.anchors_gen(input_size="320x320", anchor=203)),
        ("anchors-gen check", reports.anchors_gen(input_size="320x320", check_deps=deps, show=3)),
        ("anchors-gen differ", reports.anchors_gen(input_size="300x300",
                                                   check_model="dumps/face_ssd/face_ssd_tail.tflite")),
        ("anchors-gen written", reports.anchors_gen(feature_maps="20,10,5,3,2,1", no_reduce_lowest=True,
                                                    output=f"{_runs()}/anchors.bin")),
    ]
    out += [("impact", reports.impact(f"{_runs()}/lib", f"{_runs()}/broken", deps=deps)),
            ("impact none", reports.impact(f"{_runs()}/lib", f"{_runs()}/ours", deps=deps)),
            ("impact drawn", reports.impact(f"{_runs()}/lib", f"{_runs()}/broken", deps=deps, image_size="640x480",
                                            draw=f"{_runs()}/changed.png", max_decodes=5))]
    ev = "dumps/evidence"
    out += [("csr compare", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/csr_driver.log")),
            ("csr masked reads", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/csr_driver.log", reads=True,
                                             mask=["tileconfig0", "0x485a8=0xffff"])),
            ("csr limited", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/csr_driver.log", limit=3)),
            ("csr dumps", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/npu_driver.log")),
            ("csr dumps all", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/npu_driver.log", all=True)),
            ("csr snapshot", reports.csr(f"{ev}/csr_before.json", f"{ev}/csr_after.txt")),
            ("csr same", reports.csr(f"{ev}/csr_libedgetpu.log", f"{ev}/csr_libedgetpu.log", snapshot=True))]
    out += [("simulate", reports.simulate(f"{LIB}/Squeeze1.bin", bug="lane_swap:16", output=f"{_runs()}/sim.bin")),
            ("simulate list", reports.simulate(bug="list")),
            ("extract", reports.extract("dumps/face_ssd/face_ssd_tail.tflite", output=f"{_runs()}/deps")),
            ("relayout", reports.relayout(_write(bytes(range(256)) * 688 + bytes(240), "raw_scores"),
                                          model=LINK_MODEL, layer="convert_scores", output=f"{_runs()}/scores.bin"))]
    if CLASSIFIER.is_file():
        out += [("decode top-k", reports.decode(f"{LIB}/input.bin", f"{BROKEN}/input.bin", model=CLASSIFIER,
                                                 top_k=3, offset=0, length=1001, labels=CORAL / "coco_labels.txt"))]
    return out


_RUNS: list = []


def _runs() -> str:
    """A folder of runs ingested from the bundled dumps: lib, broken and ours (each driver's three buffers), and
    loop/run-1..6 (one input, run-3 and run-4 the broken driver's scores) and periodic/run-1..9 (every third
    run the broken driver's scores)."""
    if not _RUNS:
        import atexit
        import shutil
        import tempfile

        from forensics import reports

        where = tempfile.mkdtemp(prefix="forensics-serial-runs-")
        atexit.register(shutil.rmtree, where, True)
        for name, source in (("lib", "libedgetpu"), ("broken", "broken"), ("ours", "ours")):
            reports.ingest(f"{where}/{name}", [f"input=dumps/{source}/input.bin",
                                               f"raw:convert_scores=dumps/{source}/convert_scores.bin",
                                               f"tensor:Squeeze1=dumps/{source}/Squeeze1.bin"], source=source)
        for i in range(1, 7):
            scores = "broken" if i in (3, 4) else "libedgetpu"
            reports.ingest(f"{where}/loop/run-{i}", [f"input={LIB}/input.bin",
                                                     f"raw:convert_scores=dumps/{scores}/convert_scores.bin"],
                           source="ours")
        for i in range(1, 10):
            periodic = "broken" if i % 3 == 0 else "libedgetpu"  # every 3rd run: a Period
            reports.ingest(f"{where}/periodic/run-{i}", [f"input={LIB}/input.bin",
                                                         f"raw:convert_scores=dumps/{periodic}/convert_scores.bin"],
                           source="ours")
        _RUNS.append(where)
    return _RUNS[0]


LINK_MODEL = "dumps/link/tiny_edgetpu.tflite"
CORAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "coral"
CLASSIFIER = CORAL / "mobilenet_v1_0.25_128_quant_edgetpu.tflite"
NEEDS_CLASSIFIER = ("forensics.model.classes",)  # types only a classifier model's top-k builds


def _farm() -> str:
    """A batch folder of the runs: ours (lib against ours) and broken (lib against broken)."""
    import os
    import shutil

    farm = f"{_runs()}/farm"
    if not os.path.isdir(farm):
        for pair, b in (("ours", "ours"), ("broken", "broken")):
            shutil.copytree(f"{_runs()}/lib", f"{farm}/{pair}/a_lib")
            shutil.copytree(f"{_runs()}/{b}", f"{farm}/{pair}/b_{b}")
    return farm


def _h2_changed() -> str:
    """A copy of the lib run whose tensor file changed after capture (one byte)."""
    import os
    import shutil

    changed = f"{_runs()}/changed"
    if not os.path.isdir(changed):
        shutil.copytree(f"{_runs()}/lib", changed)
        with open(f"{changed}/tensor/Squeeze1.bin", "r+b") as f:
            f.seek(10)
            f.write(b"\x01")
    return changed


def _h2_tails() -> list:
    """compare and tolerance of captures of the face SSD's CPU tail in LiteRT and LiteRT with XNNPACK, fed the
    lib and broken drivers' outputs (their scores' data lanes); none without LiteRT."""
    import numpy as np

    from forensics import reports
    from forensics.core.errors import DependencyError

    model, where = "dumps/face_ssd/face_ssd_tail.tflite", f"{_runs()}/tails"
    try:
        for driver in ("libedgetpu", "broken"):
            scores = f"{_runs()}/{driver}_scores.bin"
            np.ascontiguousarray(np.fromfile(f"dumps/{driver}/convert_scores.bin", np.uint8).reshape(-1, 4)[:, :2]
                                 ).tofile(scores)
            captured = reports.capture(model=model, input=[f"Squeeze1=dumps/{driver}/Squeeze1.bin",
                                                           f"convert_scores={scores}"],
                                       output=f"{where}/{driver}", runtime="all")
        one = reports.capture(model=model, input=[f"Squeeze1={LIB}/Squeeze1.bin", f"convert_scores={scores}"],
                              output=f"{where}/one", runtime="litert-xnnpack")
    except DependencyError:
        return []
    lib, broken = f"{where}/libedgetpu", f"{where}/broken"
    return [("capture runtimes", captured), ("capture", one),
            ("compare rounding", reports.compare(f"{lib}/litert", f"{lib}/litert-xnnpack")),
            ("compare detections", reports.compare(f"{lib}/litert", f"{broken}/litert", model=model)),
            ("compare tolerance-from", reports.compare(f"{broken}/litert", f"{lib}/litert-xnnpack",
                                                       tolerance_from=[lib])),
            ("tolerance runtimes", reports.tolerance(lib))]


def _h2_images() -> list:
    """capture --image and capture --images (one image that is no picture: it fails alone) of a small image
    model in LiteRT; none without LiteRT or Pillow."""
    import os

    from forensics import reports
    from forensics.core.errors import DependencyError
    from tests.runs.test_capture import _image_model

    try:
        from PIL import Image
    except ImportError:
        return []
    where = f"{_runs()}/images"
    os.makedirs(f"{where}/in")
    with open(f"{where}/image.tflite", "wb") as f:
        f.write(_image_model())
    for i, size in enumerate(((40, 30), (53, 37))):
        Image.new("RGB", size, (40 * i, 90, 200)).save(f"{where}/in/img{i}.png")
    with open(f"{where}/in/broken.png", "wb") as f:
        f.write(b"not a png")
    try:
        return [("capture image", reports.capture(model=f"{where}/image.tflite", image=f"{where}/in/img1.png",
                                                  output=f"{where}/one", resampling="bilinear")),
                ("capture images", reports.capture(model=f"{where}/image.tflite", images=f"{where}/in",
                                                   output=f"{where}/farm", source="a_litert"))]
    except DependencyError:
        return []


def _replayed() -> list:
    """decode --replay of the bundled dumps in LiteRT (its ReplayResult); none without a runtime."""
    from forensics import reports
    from forensics.core.errors import DependencyError

    try:
        return [reports.decode(f"{d}/Squeeze1.bin", f"{d}/convert_scores.bin", deps="dumps/face_ssd", replay=True)
                for d in ("dumps/ours", BROKEN)]
    except DependencyError:
        return []


def _classified() -> list:
    """decode --top-k of 1001 bytes of the bundled input dumps (where the broken driver's differ) read as the
    real classifier's scores, with and without labels; none when ../shared is absent."""
    if not CLASSIFIER.is_file():
        return []
    from forensics import reports

    return [reports.decode(f"{LIB}/input.bin", f"{BROKEN}/input.bin", model=CLASSIFIER, top_k=5, offset=112320,
                           length=1001).result,
            reports.decode(f"{LIB}/input.bin", f"{BROKEN}/input.bin", model=CLASSIFIER, top_k=3, offset=0,
                           length=1001, labels=CORAL / "coco_labels.txt").result]


def _parameters() -> str:
    """The tiny model's parameter bytes, written by `link --parameters` (a check of them: MATCH)."""
    import atexit
    import shutil
    import tempfile

    from forensics import reports

    where = tempfile.mkdtemp(prefix="forensics-serial-")
    atexit.register(shutil.rmtree, where, True)
    reports.link(LINK_MODEL, parameters=True, out=f"{where}/parameters.bin")
    return f"{where}/parameters.bin"


def _simulated(bug: str):
    """B as `bug` makes it from the bundled convert_scores dump (bytes: diagnose reads them as a dump)."""
    from forensics.diagnose.simulate import simulate

    return _SIMULATED.setdefault(bug, _write(simulate(f"{LIB}/convert_scores.bin", bug).data, bug))


_SIMULATED: dict = {}


def _write(data: bytes, bug: str) -> str:
    import atexit
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="forensics-serial-")
    atexit.register(shutil.rmtree, where, True)
    path = f"{where}/{bug.replace(':', '_')}.bin"
    with open(path, "wb") as f:
        f.write(data)
    return path


def _impact():
    """The story's records that matter, found by ssd_impact on the bundled dumps (scores: the data lanes)."""
    import numpy as np

    from forensics.decode.deps import read_deps
    from forensics.decode.impact import SsdArrays, SsdModel, ssd_impact

    boxes = np.fromfile(f"{LIB}/Squeeze1.bin", np.uint8).reshape(-1, 4)

    def scores(path):
        return np.ascontiguousarray(np.fromfile(path, np.uint8).reshape(-1, 4)[:, :2])

    return ssd_impact(SsdArrays(boxes, scores(f"{LIB}/convert_scores.bin")),
                      SsdArrays(boxes, scores(f"{BROKEN}/convert_scores.bin")),
                      SsdModel(read_deps("dumps/face_ssd"), input_size=(320, 320)))


def _results() -> list:
    """Results no converted command returns whole: the parts of other commands' results."""
    from forensics import reports
    from forensics.buffer.fingerprint import check_log
    from forensics.csr.registers import beagle_table

    from forensics.diagnose.simulate import simulate
    from forensics.io.dump import parse_sidecar
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.graph import graph_summary
    from forensics.model.tflite.model import open_model
    from forensics.link.bitstream import parse_expect

    return [
        _impact(),
        reports.decode(f"{BROKEN}/Squeeze1.bin", f"{BROKEN}/convert_scores.bin", deps="dumps/face_ssd"),
        reports.decode("dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin", deps="dumps/face_ssd",
                       image_size="640x480"),  # its letterbox
        *_replayed(),
        reports.anchors_gen(input_size="320x320", check_deps="dumps/face_ssd", show=3),
        reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", deps="dumps/face_ssd"),
        beagle_table(),
        simulate(f"{LIB}/convert_scores.bin", "shift:4"),
        reports.anchors("dumps/ours/convert_scores.bin", record=4).result,
        reports.anchors(f"{LIB}/Squeeze1.bin", record=4).result,  # no dominant record: its top scores
        reports.diff(f"{LIB}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", scale=0.0039,
                     zero_point=0).result,  # the LSB statistics of an integer buffer
        reports.diff(f"{LIB}/Squeeze1.bin", f"{BROKEN}/Squeeze1.bin").result,
        reports.verify("dumps/evidence/driver.log", f"{LIB}/convert_scores.bin").result,
        check_log("dumps/evidence/driver.log", {"output": f"{LIB}/convert_scores.bin"}),
        parse_expect("output:Squeeze1=0x8000000000844000"),
        *_classified(),
        graph_summary(open_model(LINK_MODEL), read_packages(open_model(LINK_MODEL))),
        read_packages(open_model(LINK_MODEL)),  # their executables' field offsets
        parse_sidecar(open(f"{LIB}/convert_scores.json").read(), f"{LIB}/convert_scores.json"),
        reports.ingest(f"{_runs()}/logged", [f"input={LIB}/input.bin", "log:dbgview=dumps/evidence/dbgview.log"],
                       source="ours").result,  # its buffers' and log's manifest entries
    ]


_saved, _text = saved_document, rendered_text


def _instances() -> dict[type, list]:
    """Real results of every Serial type, from the reports and the results they hold."""
    found: dict[type, list] = {}

    def walk(value):
        if isinstance(value, serial.Serial):
            found.setdefault(type(value), []).append(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    for _, report in REPORTS:
        walk(report.result)
    for result in _results():
        walk(result)
    return found


REPORTS = _reports()
INSTANCES = _instances()


@pytest.mark.parametrize("kind", sorted(_serial_types(), key=lambda t: f"{t.__module__}.{t.__qualname__}"),
                         ids=lambda t: f"{t.__module__}.{t.__qualname__}")
def test_every_result_type_reads_back_from_its_document(kind):
    if kind.__module__.startswith("tests."):
        pytest.skip("a test's own type")
    if kind.__module__ == "forensics.decode.replay" and not _replayed():
        pytest.skip("no LiteRT runtime to replay the kernel in")
    if kind.__module__ in NEEDS_CLASSIFIER and not CLASSIFIER.is_file():
        pytest.skip("../shared/data/coral is absent: no classifier to build a top-k with")
    assert kind in INSTANCES, f"no real {kind.__qualname__} built: add a case to _reports()"
    for result in INSTANCES[kind]:
        doc = json.loads(json.dumps(result.to_dict()))  # as a saved file holds it
        back = kind.from_dict(doc)
        assert json.loads(json.dumps(back.to_dict())) == doc
        if getattr(result, "source_format", "binary") == "binary":  # a .npy dump's format is not saved
            assert _with_unsaved(back, result) == result


def _with_unsaved(back, result):
    """`back` with the fields its document does not carry (skip=True: pictures, internals) taken from `result`:
    every other field must have read back equal."""
    unsaved = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
               if f.init and (serial._spec(f)["skip"] or _non_finite(getattr(result, f.name)))}
    return dataclasses.replace(back, **unsaved)


def _non_finite(value) -> bool:
    """JSON has no NaN or infinity: such a float is saved as null."""
    return isinstance(value, float) and not math.isfinite(value)


@pytest.mark.parametrize("name, report", REPORTS, ids=[name for name, _ in REPORTS])
def test_a_saved_document_loads_back_and_renders_the_same(name, report):
    from forensics import reports

    loaded = reports.load(_saved(report))
    assert type(loaded) is type(report) and loaded.verdict == report.verdict
    assert loaded.exit_code == report.exit_code
    assert _text(loaded) == _text(report)
    assert _saved(loaded) == _saved(report)


def test_a_saved_file_loads_back(tmp_path):
    from forensics import reports
    from forensics.render.console import to_json

    report = reports.crc(f"{LIB}/input.bin", f"{BROKEN}/input.bin", chunk=960)
    path = tmp_path / "crc.json"
    path.write_text(to_json(report.to_dict()))
    assert _text(reports.load(path)) == _text(report)
