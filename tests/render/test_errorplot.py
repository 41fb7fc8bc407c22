"""The 2x2 error picture: its panels exist and show a scale bug and a signedness bug differently."""

import numpy as np
import pytest

from forensics.compare.diff import diff_dumps
from forensics.io.dump import open_dump
from forensics.core.layout import RecordLayout
from forensics.render.errorplot import PANEL_NAMES, error_plot, terminal_histogram

PIL = pytest.importorskip("PIL.Image")


def _picture(tmp_path, a, b, name):
    pa, pb = tmp_path / f"{name}_a.bin", tmp_path / f"{name}_b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    da, db = open_dump(pa), open_dump(pb)
    layout = RecordLayout(record_size=4, scale=1 / 256, zero_point=128)
    stats = diff_dumps(da, db, layout, sample=True).stats
    return error_plot(stats, layout, title=name)


def _pixels(picture, name):
    import io

    image = np.asarray(PIL.open(io.BytesIO(picture.png)).convert("RGB"))
    panel = next(p for p in picture.panels if p.name == name)
    return image[panel.top:panel.top + panel.height, panel.left:panel.left + panel.width]


@pytest.fixture
def bugs(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, 4096, dtype=np.uint8)
    scale_bug = np.clip(128 + (a.astype(int) - 128) * 0.8, 0, 255).astype(np.uint8)  # a slope
    sign_bug = (a ^ 0x80).astype(np.uint8)                                            # +-128
    return _picture(tmp_path, a, scale_bug, "scale"), _picture(tmp_path, a, sign_bug, "sign")


def test_panels_exist_and_are_drawn(bugs):
    for picture in bugs:
        assert picture.width >= 800 and picture.height >= 600
        assert tuple(p.name for p in picture.panels) == PANEL_NAMES
        for name in PANEL_NAMES:
            pixels = _pixels(picture, name)
            assert (pixels != 255).any(axis=2).mean() > 0.001, name  # something besides the background


def test_scale_and_signedness_bugs_look_different(bugs):
    scale, sign = bugs
    for name in ("histogram", "scatter"):
        assert not np.array_equal(_pixels(scale, name), _pixels(sign, name)), name
    # the signedness bug puts every point 128 LSB off the identity line: the scatter's diagonal is empty of
    # points far from its ends, while the scale bug's points hug a line of slope 0.8 through the middle
    blue = np.array([31, 119, 180])

    def points(picture):
        return np.argwhere((_pixels(picture, "scatter") == blue).all(axis=2))

    ys, xs = points(scale).T
    assert np.corrcoef(xs, ys)[0, 1] < -0.99     # one straight line (image y grows downwards)
    ys, xs = points(sign).T
    assert abs(np.corrcoef(xs, ys)[0, 1]) < 0.9  # two bands, not one line


def test_terminal_histogram_ascii_fallback():
    edges, counts = np.linspace(0, 1, 5), np.array([0, 3, 300, 1])
    uni = terminal_histogram(edges, counts)
    asc = terminal_histogram(edges, counts, unicode=False)
    assert "█" in uni[0] and uni[0].count(" ") >= 2
    assert asc[0].isascii() and "@" in asc[0]
    assert terminal_histogram(edges, np.zeros(4)) == []


def test_cli_diff_plot(cli, tmp_path):
    out = tmp_path / "err.png"
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--plot", out)
    assert r.code == 1 and f"wrote {out}" in r.out
    image = PIL.open(out)
    assert image.size[0] >= 800 and image.size[1] >= 600


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_terminal_histogram_on_a_legacy_encoding(encoding):
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = dict(os.environ, PYTHONIOENCODING=encoding, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "forensics", "diff", "dumps/libedgetpu/convert_scores.bin",
                        "dumps/broken/convert_scores.bin", "--limit", "1"], cwd=REPO, env=env,
                       capture_output=True, text=True, encoding=encoding)
    assert r.returncode == 1, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("|B-A| histogram"))
    assert "@" in line and line.isascii()


@pytest.mark.parametrize("changed", [500, 12288])  # few differing values, and enough for the byte-pair path
def test_the_picture_data_is_the_comparisons_own(tmp_path, changed):
    # The panels' data come from the statistics pass; checked against plain numpy on the same bytes.
    from forensics.render.errorplot import plot_data

    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, 4096 * 4, dtype=np.uint8)
    b = a.copy()
    where = rng.choice(a.size, changed, replace=False)
    b[where] = rng.integers(0, 256, changed, dtype=np.uint8)
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    layout = RecordLayout(record_size=4, pad_lanes=(3,), scale=0.5, zero_point=10)
    stats = diff_dumps(open_dump(pa), open_dump(pb), layout, sample=True).stats
    va = (a.reshape(-1, 4)[:, :3].astype(np.float64) - 10) * 0.5   # the data lanes, dequantized by hand
    vb = (b.reshape(-1, 4)[:, :3].astype(np.float64) - 10) * 0.5
    err = np.abs(vb - va)
    assert np.array_equal(stats.sample.record_max, err.max(axis=1))
    data = plot_data(stats, lanes=[0, 1, 2])
    assert np.array_equal(data.lane_max, err.max(axis=0))
    differing = err.reshape(-1) > 0
    n = min(int(differing.sum()), 10000)
    assert np.array_equal(data.scatter_a[:n], va.reshape(-1)[differing][:n])
    assert np.array_equal(data.scatter_b[:n], vb.reshape(-1)[differing][:n])
    rest_a, rest_b = data.scatter_a[n:], data.scatter_b[n:]
    assert np.array_equal(rest_a, rest_b) and np.isin(rest_a, va).all()  # A's values, on the identity line
    assert data.hist_counts.sum() == differing.sum()
