import struct

import pytest

from offload_mlir.mlir_text import dict_key, mlir_float, mlir_int, mlir_string, ssa_name


@pytest.mark.parametrize(
    "value, text",
    [
        (1e-05, "1.0e-05"),
        (0.1, "0.1"),
        (1.0, "1.0"),
        (-2.5, "-2.5"),
        (1e20, "1.0e+20"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e-08 * 3, "3.0000000000000004e-08"),
        (1.1111111111111112, "1.1111111111111112"),
    ],
)
def test_float_decimal(value, text):
    assert mlir_float(value) == text
    # Shortest round-trip decimal: parsing it back gives the same double.
    assert float(text) == value


def test_float_special_values_use_bit_patterns():
    assert mlir_float(float("inf")) == "0x7FF0000000000000"
    assert mlir_float(float("-inf")) == "0xFFF0000000000000"
    nan = mlir_float(float("nan"))
    assert nan.startswith("0x7FF8")
    bits = int(nan, 16)
    assert struct.unpack("<d", struct.pack("<Q", bits))[0] != 0.0


def test_int_range():
    assert mlir_int(9223372036854775807) == "9223372036854775807 : i64"
    with pytest.raises(OverflowError):
        mlir_int(1 << 63)


def test_string_escapes():
    assert mlir_string('a"b\\c') == '"a\\"b\\\\c"'
    assert mlir_string("x\ny") == '"x\\0Ay"'
    assert mlir_string("é") == '"\\C3\\A9"'


def test_names():
    used = set()
    assert ssa_name("mm", used) == "mm"
    assert ssa_name("mm", used) == "mm_1"
    assert ssa_name("1x", used) == "v_1x"
    assert dict_key("dtype") == "dtype"
    assert dict_key("true") == '"true"'
    assert dict_key("a-b") == '"a-b"'
