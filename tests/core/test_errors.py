"""Errors carry structure: the reason, the parameter it is about and the value given; a value is never read as a
template, so braces in what a user typed print as typed and never become another flag's name."""

import pytest

from forensics.core.errors import InputError
from tests.conftest import run_cli


def test_an_error_names_its_parameter_and_keeps_the_value_as_given():
    exc = InputError("expected a number, got '{model}'", param="atol", value="{model}")
    assert (exc.reason, exc.param, exc.value) == ("expected a number, got '{model}'", "atol", "{model}")
    assert str(exc) == "atol: expected a number, got '{model}'"
    assert exc.worded(lambda name, metavar: "--" + name) == "--atol: expected a number, got '{model}'"
    with_path = InputError("empty", "x.bin", param="length", value="0")
    assert str(with_path) == "x.bin: length: empty"


@pytest.mark.parametrize("argv, expected", [
    (["diff", "dumps/ours/input.bin", "dumps/ours/input.bin", "--atol", "{model}"],
     "forensics diff: error: --atol: expected a number of LSB like 1lsb or a value like 0.01, got '{model}'"),
    (["diff", "dumps/ours/input.bin", "dumps/ours/input.bin", "--rtol", "{deps}"],
     "forensics diff: error: --rtol: expected a number like 0.01, got '{deps}'"),
    (["diff", "dumps/ours/input.bin", "dumps/ours/input.bin", "--atol", "-1"],
     "forensics diff: error: --atol: expected a non-negative number, got '-1'"),
])
def test_a_value_with_braces_is_printed_as_typed_and_the_flag_is_the_one_given(argv, expected):
    result = run_cli(*argv)
    assert result.code == 2 and result.err.strip() == expected
