"""The one reader of dump data (forensics.io.dump.DumpReader / iter_windows): every path gives the file's bytes,
a file that shrinks under it is one InputError naming the file, and abandoning a stream stops its thread."""

import random
import threading

import pytest

from forensics.io import dump as dump_mod
from forensics.io.dump import DumpReader, iter_windows, open_dump
from forensics.core.errors import InputError


@pytest.fixture(params=["map", "pread"])
def use_map(request, monkeypatch):
    if request.param == "map" and not dump_mod.CAN_MAP:
        pytest.skip("this platform cannot map pre-faulted windows")
    monkeypatch.setattr(dump_mod, "CAN_MAP", request.param == "map")
    return request.param == "map"


def _bounds(size, step):
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("size,step", [(1, 7), (100_000, 4096), (100_003, 10_000), (65_536, 65_536)])
def test_windows_give_the_file_bytes(tmp_path, use_map, prefetch, size, step):
    data = random.Random(401).randbytes(size)
    (tmp_path / "x.bin").write_bytes(data)
    seen = bytearray()
    for lo, view, extra in iter_windows(open_dump(tmp_path / "x.bin"), _bounds(size, step), prefetch=prefetch,
                                        work=len):
        assert lo == len(seen) and extra == len(view)
        seen += view
    assert bytes(seen) == data


def test_npy_data_offset_is_honoured(tmp_path, use_map):
    np = pytest.importorskip("numpy")
    arr = np.arange(5000, dtype=np.uint16)
    np.save(tmp_path / "x.npy", arr)
    d = open_dump(tmp_path / "x.npy")
    got = b"".join(bytes(v) for _, v, _ in iter_windows(d, _bounds(d.size, 3000)))
    assert got == arr.tobytes() and d.read(10, 4) == arr.tobytes()[10:14]


def test_shrunk_file_is_one_input_error(tmp_path, use_map):
    path = tmp_path / "x.bin"
    path.write_bytes(b"\x01" * 50_000)
    d = open_dump(path)
    with open(path, "r+b") as fh:
        fh.truncate(20_000)
    with pytest.raises(InputError, match="shrank") as info:
        for _ in iter_windows(d, _bounds(d.size, 8192), prefetch=True):
            pass
    assert str(path) in str(info.value)


def test_missing_file_is_one_input_error(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"abc")
    d = open_dump(path)
    path.unlink()
    with pytest.raises(InputError, match="no such") as info:
        DumpReader(d)
    assert str(path) in str(info.value)


def test_abandoned_stream_stops_its_thread(tmp_path, use_map):
    path = tmp_path / "x.bin"
    path.write_bytes(random.Random(402).randbytes(1 << 20))
    before = threading.active_count()
    stream = iter_windows(open_dump(path), _bounds(1 << 20, 4096), prefetch=True)
    next(stream)
    stream.close()
    assert threading.active_count() == before


def test_read_exact_from_two_threads(tmp_path):
    data = random.Random(403).randbytes(1 << 18)
    (tmp_path / "x.bin").write_bytes(data)
    out = {}
    with DumpReader(open_dump(tmp_path / "x.bin")) as reader:
        def grab(lo, hi):
            out[lo] = bytes(reader.read_exact(lo, memoryview(bytearray(hi - lo))))
        threads = [threading.Thread(target=grab, args=b) for b in _bounds(len(data), 1 << 16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert b"".join(out[k] for k in sorted(out)) == data
