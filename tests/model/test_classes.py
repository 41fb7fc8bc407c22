"""Classifier outputs: top-k of both sides with dequantized scores and rank changes (MobileNet's 1001 classes)."""

import json

import numpy as np
import pytest

from forensics.model.classes import ClassVector, compare_top_k, ranking, read_scores
from tests.conftest import assert_one_line_error

MODEL = "mobilenet_v1_0.25_128_quant_edgetpu.tflite"


def test_ranking_breaks_ties_by_class_id():
    scores = np.array([0.1, 0.5, 0.5, 0.9, 0.1])
    assert ranking(scores).tolist() == [3, 1, 2, 0, 4]
    assert ranking(scores).tolist() == sorted(range(5), key=lambda c: (-scores[c], c))


def test_raw_padding_is_ignored_and_scores_dequantized():
    v = ClassVector(1001, "uint8", 0.00390625, 0)
    data = bytes(range(256)) * 3 + bytes(1001 - 768)
    tensor = read_scores(data, v)
    raw = read_scores(data + bytes(7), v)  # the chip's 1,008 bytes
    assert np.array_equal(tensor, raw) and tensor[255] == pytest.approx(255 / 256)
    with pytest.raises(Exception, match="1,001 uint8 class scores are 1,001 bytes"):
        read_scores(data[:-1], v)


def test_rank_changes_against_a_plain_sort():
    rng = np.random.default_rng(4)
    a, b = rng.random(50), rng.random(50)
    labels = tuple(f"c{i}" for i in range(50))
    got = compare_top_k(a, b, ClassVector(50), k=5, labels=labels)
    order_a = sorted(range(50), key=lambda c: -a[c])
    order_b = sorted(range(50), key=lambda c: -b[c])
    assert [c.class_id for c in got.top_a] == order_a[:5]
    assert [c.class_id for c in got.top_b] == order_b[:5]
    for c in got.top_a + got.top_b:
        assert c.rank_a == order_a.index(c.class_id) + 1 and c.rank_b == order_b.index(c.class_id) + 1
        assert c.label == f"c{c.class_id}"


def _classifier_dumps(tmp_path):
    a = np.zeros(1001, np.uint8)
    a[[281, 282, 285]] = (179, 182, 100)  # tabby 0.71 and tiger cat 0.70 in A
    b = a.copy()
    b[[281, 282]] = (180, 178)            # B swaps them
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes() + bytes(7))  # the raw output, lane padded
    labels = tmp_path / "labels.txt"
    names = [f"class{i}" for i in range(1001)]
    names[281], names[282] = "tiger cat", "tabby"
    labels.write_text("\n".join(names) + "\n", encoding="utf-8")
    return pa, pb, labels


def test_decode_top_k_of_a_real_classifier(tmp_path, cli, shared_data):
    pa, pb, labels = _classifier_dumps(tmp_path)
    model = shared_data / MODEL
    r = cli("decode", pa, pb, "--model", model, "--top-k", "5", "--labels", labels)
    assert r.code == 1
    assert r.out.startswith("DIFFER | top-1 differs: tabby 0.71 vs tiger cat 0.70")
    doc = json.loads(cli("decode", pa, pb, "--model", model, "--top-k", "3", "--labels", labels, "--json").out)
    assert [c["label"] for c in doc["top_a"]] == ["tabby", "tiger cat", "class285"]
    assert doc["top_a"][0]["rank_change"] == 1 and doc["classes"]["num_classes"] == 1001
    assert cli("decode", pa, pa, "--model", model, "--top-k", "5").code == 0


def test_decode_top_k_bad_input(tmp_path, cli, shared_data):
    pa, pb, _ = _classifier_dumps(tmp_path)
    short = tmp_path / "short.bin"
    short.write_bytes(bytes(100))
    assert_one_line_error(cli("decode", pa, short, "--model", shared_data / MODEL, "--top-k", "5"),
                          "short.bin", "class scores")
    assert_one_line_error(cli("decode", pa, pb, "--top-k", "5"), "--top-k needs --model")


@pytest.mark.parametrize("size", [1001, 1008])  # the TFLite tensor, and the chip's lane-padded output
def test_diff_of_a_class_vector_names_the_class_not_an_anchor(shared_data, tmp_path, cli, size):
    model = shared_data / MODEL
    rng = np.random.default_rng(6)
    a = rng.integers(0, 256, size, dtype=np.uint8)
    b = a.copy()
    b[653] ^= 4
    b[12] ^= 1
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"name{c}\n" for c in range(1001)))
    tensor = "MobilenetV1/Predictions/Reshape_1"
    r = cli("diff", pa, pb, "--model", model, "--tensor", tensor)
    assert r.code == 1 and "at class 653;" in r.out and "anchor" not in r.out.split("lanes")[0]
    assert r.out.startswith("DIFFER | 2 of 1,001 class scores differ")
    doc = json.loads(cli("diff", pa, pb, "--model", model, "--tensor", tensor, "--labels", labels, "--json").out)
    assert doc["stats"]["worst"] == {"index": 653, "class": 653, "label": "name653", "offset": 653}
