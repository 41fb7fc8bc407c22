"""The DWN1 package and relayout on the real Edge TPU models, against libedgetpu's facts and a slow oracle."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from forensics.model.tflite.relayout import inverse_relayout, layer_map, relayout

SEGMENTS = ["ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
            "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"]
ALL_EDGETPU = SEGMENTS + ["split_concat_edgetpu.tflite", "mobilenet_v1_0.25_128_quant_edgetpu.tflite"]


def package(path):
    model = open_model(path)
    (pkg,) = read_packages(model)
    return model, pkg


@pytest.mark.parametrize("name", SEGMENTS)
def test_ssd_segment_layers_match_pitfalls(shared_data, name):
    _, pkg = package(shared_data / name)
    assert [e.type for e in pkg.executables] == ["EXECUTION_ONLY", "PARAMETER_CACHING"]
    scores, boxes = pkg.output_layer("convert_scores"), pkg.output_layer("Squeeze1")
    assert (scores.x_dim, scores.z_dim, scores.size_bytes, scores.unpadded_size_bytes) == (1917, 91, 176368, 174447)
    assert (boxes.size_bytes, boxes.unpadded_size_bytes) == (7672, 7668)
    m = layer_map(scores)
    assert m.z_bytes_padded == 92
    tiles = np.bincount(scores.layout.x_coordinate_to_linear_tile_id_map)
    assert tiles.tolist() == [480, 479, 479, 479]


@pytest.mark.parametrize("name", ALL_EDGETPU)
def test_parameter_crc_is_the_crc_of_the_file_bytes(shared_data, name):
    data = (shared_data / name).read_bytes()
    _, pkg = package(shared_data / name)
    caching = [e for e in pkg.executables if e.parameters_size]
    assert caching, "every real package carries parameters in one executable"
    for exe in caching:
        blob = data[exe.parameters_offset:exe.parameters_offset + exe.parameters_size]
        assert zlib.crc32(blob) == exe.parameters_crc32
    assert data[pkg.offset + 4:pkg.offset + 8] == b"DWN1"


def test_field_offsets_name_the_input_layers(shared_data):
    _, pkg = package(shared_data / SEGMENTS[0])
    exe = pkg.executables[0]
    named = {f.name for f in exe.field_offsets if f.desc == "BASE_ADDRESS_INPUT_ACTIVATION"}
    assert named == {layer.name for layer in exe.input_layers}
    assert {f.position for f in exe.field_offsets} == {"LOWER_32BIT", "UPPER_32BIT"}


def slow_relayout(raw: bytes, layer) -> bytes:
    """libedgetpu's GetBufferIndex, element by element (the oracle for the vectorised map)."""
    lay = layer.layout
    out = bytearray()
    for y in range(layer.y_dim):
        for x in range(layer.x_dim):
            tile = lay.y_coordinate_to_linear_tile_id_map[y] + lay.x_coordinate_to_linear_tile_id_map[x]
            base = (lay.linearized_tile_byte_offset[tile]
                    + lay.y_coordinate_to_local_y_offset[y] * lay.x_coordinate_to_local_y_row_size[x]
                    + lay.x_coordinate_to_local_byte_offset[x])
            out += raw[base:base + layer.z_dim]
    return bytes(out)


@pytest.mark.parametrize("name", ALL_EDGETPU)
def test_relayout_matches_slow_oracle_and_round_trips(shared_data, name):
    _, pkg = package(shared_data / name)
    rng = np.random.default_rng(11)
    for layer in pkg.executables[0].output_layers:
        m = layer_map(layer)
        raw = rng.integers(0, 256, m.raw_size, dtype=np.uint8)
        tensor = relayout(raw, m)
        if layer.y_dim * layer.x_dim > 1:
            assert tensor.tobytes() == slow_relayout(raw.tobytes(), layer)
        else:
            assert tensor.tobytes() == raw.tobytes()[:m.tensor_size]
        back = inverse_relayout(tensor, m, pad_byte=0xA5)
        np.testing.assert_array_equal(relayout(back, m), tensor)
        # the padding lands exactly where the layout leaves bytes unused
        pad = m.pad_mask()
        assert int(pad.sum()) == m.raw_size - m.tensor_size
        assert (back[pad] == 0xA5).all()
        np.testing.assert_array_equal(back[~pad], raw[~pad])


def test_scores_padding_is_lane_91_of_each_92_byte_record(shared_data):
    _, pkg = package(shared_data / SEGMENTS[0])
    m = layer_map(pkg.output_layer("convert_scores"))
    raw = inverse_relayout(np.zeros(m.tensor_size, np.uint8), m)  # pad 0x80
    body = raw[:1917 * 92].reshape(1917, 92)
    assert (body[:, 91] == 0x80).all() and (body[:, :91] == 0).all()
    assert (raw[1917 * 92:] == 0x80).all()


def test_split_concat_z2_tiles_reorder_records(shared_data):
    _, pkg = package(shared_data / "split_concat_edgetpu.tflite")
    layer = pkg.output_layer("outputs/rnn2")
    m = layer_map(layer)
    assert (m.raw_size, m.tensor_size, m.z_bytes_padded) == (256, 128, 4)
    tensor = np.arange(128, dtype=np.uint8)
    raw = inverse_relayout(tensor, m, pad_byte=0xFF)
    assert raw.tobytes() != np.pad(tensor.reshape(64, 2), ((0, 0), (0, 2)), constant_values=0xFF).tobytes()
    np.testing.assert_array_equal(relayout(raw, m), tensor)


def test_wrong_sizes_name_both(shared_data):
    _, pkg = package(shared_data / SEGMENTS[0])
    m = layer_map(pkg.output_layer("convert_scores"))
    with pytest.raises(InputError, match="176368 bytes raw .* 174447 bytes as a tensor"):
        relayout(np.zeros(8136, np.uint8), m)
    with pytest.raises(InputError, match="176368"):
        inverse_relayout(np.zeros(176368, np.uint8), m)


def test_signed_layers_flip_the_msb(shared_data):
    import dataclasses

    _, pkg = package(shared_data / "split_concat_edgetpu.tflite")
    layer = dataclasses.replace(pkg.output_layer("outputs/rnn2"), data_type=8)  # SIGNED_FIXED_POINT8
    m = layer_map(layer)
    raw = np.zeros(256, np.uint8)
    assert (relayout(raw, m) == 0x80).all()
    np.testing.assert_array_equal(relayout(inverse_relayout(np.arange(128, dtype=np.uint8), m), m),
                                  np.arange(128, dtype=np.uint8))


def test_layout_pointing_past_size_bytes_is_a_format_error(shared_data):
    import dataclasses

    _, pkg = package(shared_data / "split_concat_edgetpu.tflite")
    # 200 bytes holds the 8x8x2 tensor (128) but not the padded layout (256)
    layer = dataclasses.replace(pkg.output_layer("outputs/rnn2"), size_bytes=200)
    with pytest.raises(FormatError, match="addresses byte"):
        layer_map(layer)
    # fewer bytes than the tensor itself: refused from the dimensions, before any map is built
    with pytest.raises(FormatError, match="8x8x2 .128 bytes. but its size_bytes is 100"):
        layer_map(dataclasses.replace(layer, size_bytes=100))


def test_custom_op_without_options_is_a_format_error():
    from forensics.model.tflite.model import read_model
    from forensics.model.tflite.writer import ModelSpec, OpCodeSpec, OperatorSpec, TensorSpec, build_model

    data = build_model(ModelSpec(tensors=[TensorSpec("a", [4], "uint8")], opcodes=[OpCodeSpec(custom_code="edgetpu-custom-op")],
                                 operators=[OperatorSpec(0, [0], [0])], inputs=[0], outputs=[0]))
    with pytest.raises(FormatError, match="no custom options"):
        read_packages(read_model(data))
    data = build_model(ModelSpec(tensors=[TensorSpec("a", [4], "uint8")], opcodes=[OpCodeSpec(custom_code="edgetpu-custom-op")],
                                 operators=[OperatorSpec(0, [0], [0], custom_options=b"\x00\x01\x02")],
                                 inputs=[0], outputs=[0]))
    with pytest.raises(FormatError):
        read_packages(read_model(data))


def test_a_raw_and_a_tensor_dump_are_refused_with_a_relayout_that_runs_as_printed(tmp_path, cli, shared_data,
                                                                                 monkeypatch):
    # A is the TFLite tensor, B the chip's raw layer of the same scores: diff says to relayout B, and the
    # command it prints, run as printed, makes a B that matches A.
    import shlex

    model = str(shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite")
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(4)
    tensor = rng.integers(0, 256, (1917, 91), dtype=np.uint8)
    (tmp_path / "a.bin").write_bytes(tensor.tobytes())
    assert cli("relayout", "a.bin", "--model", model, "--layer", "convert_scores", "--inverse",
               "-o", "b.bin").code == 0  # B: the same scores in the chip's raw layout
    result = cli("diff", "a.bin", "b.bin", "--model", model, "--tensor", "convert_scores")
    assert result.code == 2 and "relayout the raw one first (forensics relayout b.bin" in result.err
    command = result.err.rsplit("(", 1)[1].rstrip(")\n")
    assert cli(*shlex.split(command)[1:]).code == 0
    assert cli("diff", "a.bin", "b.tensor.bin", "--model", model, "--tensor", "convert_scores").code == 0
