"""The one dequantize (forensics.core.layout.dequantize) against float64 arithmetic done by hand: a product of two
float32 values is exact in float64, so each float32 rounding can be written as one np.float32() of it."""

import numpy as np
import pytest

from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout, dequantize

CODES = np.arange(256, dtype=np.uint8)


@pytest.mark.parametrize("scale,zero_point", [(1 / 256, 0), (0.10822763, 128), (0.0078125, -5), (3.3, 255)])
def test_each_rounding_is_the_arithmetic_it_names(scale, zero_point):
    s32 = float(np.float32(scale))
    exact = [(int(q) - zero_point) * scale for q in CODES]
    assert dequantize(CODES, scale, zero_point).tolist() == exact
    reference = [np.float32((int(q) - zero_point) * s32) for q in CODES]  # one rounding of an exact product
    assert dequantize(CODES, scale, zero_point, "reference").tolist() == [float(v) for v in reference]
    block = [np.float32(np.float32(int(q) * s32) - np.float32(zero_point * s32)) for q in CODES]
    assert dequantize(CODES, scale, zero_point, "block").tolist() == [float(v) for v in block]
    # litert: blocks of 8 of the flat tensor, the rest rounded once (259 codes: 32 blocks and 3 left over)
    codes = np.concatenate((CODES, CODES[:3]))
    litert = dequantize(codes, scale, zero_point, "litert")
    assert litert[:256].tolist() == [float(v) for v in block] and litert[256:].tolist() == [float(v) for v in
                                                                                             reference[:3]]


def test_one_code_and_the_layout_agree():
    layout = RecordLayout(scale=1 / 256, zero_point=0)
    assert layout.dequantize(255) == dequantize(255, 1 / 256) == 255 / 256
    with pytest.raises(InputError, match="unknown dequantize rounding"):
        dequantize(CODES, 1.0, 0, "nearest")
